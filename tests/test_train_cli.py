"""scripts/train.py and scripts/play.py end to end (single process), and their one-line errors."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, TINY, clean_env, run, train_cmd
from robolab import checkpoint

PLAY = str(ROOT / "scripts" / "play.py")


def only_run_dir(log_root: str) -> Path:
    runs = list(Path(log_root, "go2_flat").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.slow
def test_short_training_writes_checkpoints_params_events_and_summary(log_root):
    res = run(train_cmd(*TINY, "--max_iterations", "3", "--log_root", log_root, "--run_name", "smoke"))
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run_dir(log_root)
    assert run_dir.name.endswith("_smoke")
    assert {"model_0.pt", "model_1.pt", "model_2.pt"} <= set(os.listdir(run_dir))
    assert (run_dir / "params" / "env.yaml").read_text().count("num_envs: 16") == 1
    assert "num_steps_per_env: 8" in (run_dir / "params" / "agent.yaml").read_text()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run_dir))
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in (
        "task",
        "world_size",
        "iterations",
        "total_env_steps",
        "wall_s",
        "env_steps_per_s",
        "mean_reward",
        "mean_episode_length",
        "lin_vel_tracking_error",
        "fall_rate",
    ):
        assert key in summary, key
    assert summary["world_size"] == 1 and summary["iterations"] == 3
    assert summary["total_env_steps"] == 3 * 8 * 16
    saved = checkpoint.load(str(run_dir / "model_2.pt"))
    assert saved["iter"] == 2 and "optimizer_state_dict" in saved and "rng_state" in saved


@pytest.mark.slow
def test_resume_continues_the_newest_run_to_the_final_iteration(log_root):
    first = run(train_cmd(*TINY, "--max_iterations", "2", "--log_root", log_root))
    assert first.returncode == 0, first.stderr[-3000:]
    run_dir = only_run_dir(log_root)
    before = checkpoint.load(str(run_dir / "model_1.pt"))
    # Isaac Lab's meaning: --resume --max_iterations 2 trains two more iterations
    second = run(train_cmd(*TINY, "--max_iterations", "2", "--log_root", log_root, "--resume"))
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resumed" in second.stdout and "at iteration 2" in second.stdout
    assert only_run_dir(log_root) == run_dir  # continued in place
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 4 and summary["session_iterations"] == 2
    after = checkpoint.load(str(run_dir / "model_3.pt"))
    assert not torch.equal(before["actor_state_dict"]["mlp.0.weight"], after["actor_state_dict"]["mlp.0.weight"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--task", "RoboLab-Velocity-Flat-Go3-v0"],
            "unknown task 'RoboLab-Velocity-Flat-Go3-v0'; did you mean RoboLab-Velocity-Flat-Go2-v0",
        ),
        (["agent.algorithm.no_such_key=1"], "agent.algorithm.no_such_key"),
        (["env.rewards.no_such_term=1"], "no_such_term"),
        (["env.num_envs=many"], "many"),
        (["--num_envs", "0"], "--num_envs=0: must be a positive integer"),
        (["--resume", "/nonexistent/model_3.pt"], "/nonexistent/model_3.pt"),
        (["env.robot.mjcf_path=/nonexistent/robot.xml"], "robot.mjcf_path='/nonexistent/robot.xml'"),
        (["--device", "tpu"], "--device='tpu'"),
        # Isaac Lab's ids, launch flags and preset tokens where Isaac Lab is not installed or the task is embedded
        (["--task", "Isaac-Velocity-Flat-UnitreeGo2"], "Isaac Lab task ids need Isaac Lab installed"),
        (["physics=newton_mjwarp"], "physics=newton_mjwarp: presets, physics, renderer select Isaac Lab presets"),
        (["agent.clip_actions=1.0"], "agent.clip_actions=1.0: RoboLab-Velocity-Flat-Go2-v0 is an embedded task"),
        (["agent.algorithm.optimizer=lion"], "agent.algorithm.optimizer='lion': allowed: adam, adamw, sgd, rmsprop"),
        (["agent.clip_actions=-1.0"], "agent.clip_actions=-1.0: must be None or a number > 0"),
        (["agent.torch_compile_mode=fast"], "agent.torch_compile_mode='fast': allowed: (None, 'default'"),
    ],
)
def test_bad_input_is_one_line_error_naming_the_value(log_root, args, message):
    res = run(train_cmd("--max_iterations", "1", "--log_root", log_root, *args), timeout=120)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    lines = [line for line in res.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ") and message in lines[0]
    assert not Path(log_root).exists() or not any(Path(log_root).rglob("model_*.pt"))


@pytest.mark.slow
def test_unreadable_mjcf_is_one_line_error(tmp_path, log_root):
    bad = tmp_path / "robot.xml"
    bad.write_text("<mujoco><worldbody>")
    res = run(train_cmd("--max_iterations", "1", "--log_root", log_root, f"env.robot.mjcf_path={bad}"), timeout=120)
    assert res.returncode == 2 and "not a valid MJCF file" in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "play.py", "benchmark.py"])  # all share robolab.cli's parser
def test_help_shows_each_flag_s_default(script):
    import re

    res = run([sys.executable, str(ROOT / "scripts" / script), "--help"], env=clean_env(COLUMNS="300"))
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())  # argparse wraps lines
    assert "(default: None)" not in text
    expected = {
        "train.py": [
            "--task TASK task id (see --list_tasks) (default: RoboLab-Velocity-Flat-Go2-v0)",
            "(default: the task's)",
        ],
        "play.py": ["--num_envs NUM_ENVS (default: 64)"],
        "benchmark.py": ["--num_envs NUM_ENVS envs per process (default: 1024)"],
    }[script]
    for fragment in expected:
        assert fragment in text, (fragment, re.findall(r"--num_envs[^-]*", text))


def test_list_tasks_prints_registered_ids_under_a_header_and_says_why_isaac_lab_s_are_missing():
    from robolab.tasks import isaaclab_installed

    res = run(train_cmd("--list_tasks"))
    assert res.returncode == 0 and "RoboLab-Velocity-Flat-Go2-v0" in res.stdout
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith("task (--task)") and "what it trains" in lines[0]
    missing = "Isaac Lab's tasks (Isaac-*, RoboLab-Isaac-*) are not listed: Isaac Lab is not installed"
    assert (missing in lines[-1]) == (not isaaclab_installed())
    # a reader that stops early (`| head -1`) is no error
    piped = subprocess.run(
        f"{shlex.join(train_cmd('--list_tasks'))} | head -1", shell=True, capture_output=True, text=True, timeout=120
    )
    assert piped.stdout.startswith("task (--task)") and piped.stderr == "", piped.stderr


@pytest.mark.slow
def test_play_evaluates_and_exports_onnx_matching_torch(log_root):
    res = run(train_cmd(*TINY, "--max_iterations", "2", "--log_root", log_root))
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run_dir(log_root)
    play = run(
        [
            sys.executable,
            PLAY,
            "--run",
            str(run_dir),
            "--num_envs",
            "4",
            "--steps",
            "20",
            "agent.actor.hidden_dims=[32,32]",
            "agent.critic.hidden_dims=[32,32]",
        ]
    )
    assert play.returncode == 0, play.stderr[-3000:]
    result = json.loads(play.stdout[play.stdout.index("{") :])
    assert 0.0 <= result["fall_rate"] <= 1.0 and result["lin_vel_tracking_error"] >= 0.0
    onnx_path, jit_path = run_dir / "exported" / "policy.onnx", run_dir / "exported" / "policy.pt"
    assert onnx_path.exists() and jit_path.exists()

    import onnxruntime as ort

    from robolab.config import agent_dict, compose
    from robolab.envs import VelocityEnv
    from robolab.runners import OnPolicyRunner
    from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

    agent = agent_dict(
        compose("RoboLab-Velocity-Flat-Go2-v0", ["agent.actor.hidden_dims=[32,32]", "agent.critic.hidden_dims=[32,32]"])
    )
    env = VelocityEnv(Go2FlatEnvCfg(num_envs=4))
    runner = OnPolicyRunner(env, agent, device="cpu")
    runner.load(str(checkpoint.latest_checkpoint(str(run_dir))))
    policy = runner.get_inference_policy()
    obs = env.get_observations()
    expected = policy(obs).detach().numpy()
    session = ort.InferenceSession(str(onnx_path))
    name = session.get_inputs()[0].name
    np.testing.assert_allclose(session.run(None, {name: obs["policy"].numpy()})[0], expected, rtol=1e-4, atol=1e-5)
    got = session.run(None, {name: obs["policy"][:1].numpy()})[0]  # and one robot's batch of 1
    np.testing.assert_allclose(got, expected[:1], rtol=1e-4, atol=1e-5)
    meta = session.get_modelmeta().custom_metadata_map  # the interface a deployment needs, from the env's terms
    interface = env.io_descriptors()
    terms = interface["observations"]["policy"]["terms"]
    assert meta["observation_names"].split(",") == [t["name"] for t in terms]
    assert sum(int(d) for d in meta["observation_dims"].split(",")) == obs["policy"].shape[1]
    assert meta["joint_names"].split(",") == list(env.cfg.robot.joint_names)
    assert [float(v) for v in meta["default_joint_pos"].split(",")] == list(env.cfg.robot.default_joint_pos)
    assert float(meta["action_scale"]) == env.cfg.action_scale and float(meta["control_dt"]) == env.step_dt
    assert meta["robolab.task"] == "RoboLab-Velocity-Flat-Go2-v0" and meta["observation_groups"] == "policy"
    scripted = torch.jit.load(str(jit_path))
    np.testing.assert_allclose(scripted(obs["policy"]).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_play_without_checkpoint_is_a_clear_error(log_root):
    res = run([sys.executable, PLAY, "--log_root", log_root])
    assert (
        res.returncode == 2
        and "error: no checkpoint under" in res.stderr
        and "train first, or pass --checkpoint FILE" in res.stderr
    )


@pytest.mark.slow
def test_play_records_a_video_headless(log_root):
    res = run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", log_root))
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run_dir(log_root)
    tiny_nets = ["agent.actor.hidden_dims=[32,32]", "agent.critic.hidden_dims=[32,32]"]
    play = run(
        [
            sys.executable,
            PLAY,
            "--run",
            str(run_dir),
            "--num_envs",
            "2",
            "--steps",
            "2",
            "--no_export",
            "--video",
            "--video_length",
            "10",
            *tiny_nets,
        ],
        env=clean_env(MUJOCO_GL="egl"),
    )
    assert play.returncode == 0, play.stderr[-3000:]
    video = run_dir / "videos" / "play" / "play.mp4"
    assert video.exists() and video.stat().st_size > 1000

    import imageio.v2 as imageio

    frames = imageio.mimread(str(video))
    assert len(frames) == 10 and frames[0].shape == (480, 640, 3)
    assert max(f.std() for f in frames) > 5  # something was drawn, not a blank image

    # without a usable GL backend the message says so and what to do
    nogl = run(
        [
            sys.executable,
            PLAY,
            "--run",
            str(run_dir),
            "--num_envs",
            "2",
            "--steps",
            "2",
            "--no_export",
            "--video",
            *tiny_nets,
        ],
        env=clean_env(MUJOCO_GL="osmesa", PYOPENGL_PLATFORM="osmesa"),
    )
    assert nogl.returncode == 2 and "no OpenGL backend" in nogl.stderr and "MUJOCO_GL=egl" in nogl.stderr


@pytest.mark.slow
def test_plot_curve_draws_the_runs_tensorboard_scalars(log_root, tmp_path):
    res = run(train_cmd(*TINY, "--max_iterations", "3", "--log_root", log_root, "env.episode_length_s=0.1"))
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "curve.png"
    plot = run(
        [sys.executable, str(ROOT / "scripts" / "plot_curve.py"), str(only_run_dir(log_root)), "--output", str(out)]
    )
    assert plot.returncode == 0, plot.stderr[-2000:]
    assert json.loads(plot.stdout)["iterations"] == 3
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
