"""Nothing lost, nothing silent: refused resumes leave runs as they were, divergence is contained, bad files and
settings are one-line errors, files respect the umask, exports stand alone."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, TINY, run, train_cmd
from robolab import checkpoint
from robolab.cli.train import main as train_main

PLAY = str(ROOT / "scripts" / "play.py")
AMP = "RoboLab-Velocity-Flat-Go2-AMP-v0"
AMP_TINY = ["agent.algorithm.amp_cfg.batch_size=64", "agent.algorithm.amp_cfg.num_disc_updates=1"]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its content (directories included, as empty entries)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr[-3000:]
    return lines[0]


def train(log_root: str, *args: str, iterations: int = 1) -> Path:
    res = run(train_cmd(*TINY, "--max_iterations", str(iterations), "--log_root", log_root, *args))
    assert res.returncode == 0, res.stderr[-3000:]
    return max(Path(log_root).rglob("summary.json"), key=os.path.getmtime).parent  # the run just trained


# --- resumes refuse checkpoints of another kind and never damage the run -------------------------------------
@pytest.mark.slow
def test_a_checkpoint_of_another_task_is_refused_and_its_run_left_as_it_was(tmp_path):
    log_root = str(tmp_path / "logs")
    amp_run = train(log_root, "--task", AMP, *AMP_TINY)
    ppo_run = train(log_root)
    for task, foreign in (("RoboLab-Velocity-Flat-Go2-v0", amp_run), (AMP, ppo_run)):
        before = snapshot(Path(log_root))
        extra = AMP_TINY if task == AMP else []
        res = run(
            train_cmd(
                "--task",
                task,
                *TINY,
                *extra,
                "--max_iterations",
                "3",
                "--log_root",
                log_root,
                "--resume",
                str(foreign / "model_0.pt"),
            )
        )
        assert res.returncode == 2
        line = one_error_line(res.stderr)
        assert "is of another kind of run" in line and "task is" in line and "runner is" in line
        assert snapshot(Path(log_root)) == before  # no checkpoint, params, console line or directory added


@pytest.mark.slow
def test_a_failed_resume_leaves_the_run_as_it_was(tmp_path):
    log_root = str(tmp_path / "logs")
    run_dir = train(log_root)
    good = (run_dir / "model_0.pt").read_bytes()
    bad_files = {
        "truncated": good[: len(good) // 3],
        "random": np.random.default_rng(0).bytes(4096),
        "text": b"not a checkpoint\n",
    }
    for name, content in bad_files.items():
        path = run_dir / "model_7.pt"
        path.write_bytes(content)
        before = snapshot(Path(log_root))
        res = run(train_cmd(*TINY, "--max_iterations", "9", "--log_root", log_root, "--resume", str(path)))
        assert res.returncode == 2, name
        assert "not a readable checkpoint" in one_error_line(res.stderr), name
        assert snapshot(Path(log_root)) == before, name
    # a checkpoint of the same task whose networks have other shapes: refused naming a tensor
    (run_dir / "model_7.pt").unlink()
    before = snapshot(Path(log_root))
    wider = [a.replace("[32,32]", "[48,48]") for a in TINY]
    res = run(train_cmd(*wider, "--max_iterations", "3", "--log_root", log_root, "--resume", str(run_dir)))
    assert res.returncode == 2
    line = one_error_line(res.stderr)
    assert "models.actor.mlp.0." in line and "[32" in line and "[48" in line
    assert snapshot(Path(log_root)) == before


@pytest.mark.slow
def test_a_failed_start_creates_no_run_directory(tmp_path):
    log_root = tmp_path / "logs"
    teacher = tmp_path / "model_3.pt"
    teacher.write_bytes(b"garbage")
    res = run(
        train_cmd(
            "--task",
            "RoboLab-Velocity-Flat-Go2-Distillation-v0",
            "--num_envs",
            "16",
            "env.backend.num_threads=1",
            "--max_iterations",
            "1",
            "--log_root",
            str(log_root),
            "--teacher_checkpoint",
            str(teacher),
        )
    )
    assert res.returncode == 2 and "not a readable checkpoint" in one_error_line(res.stderr)
    assert snapshot(log_root) == {}


def test_latest_run_never_picks_a_run_without_checkpoint(tmp_path):
    experiment = tmp_path / "go2_flat"
    (experiment / "2026-01-01_00-00-00").mkdir(parents=True)
    checkpoint.save_atomic({"iter": 0}, str(experiment / "2026-01-01_00-00-00" / "model_0.pt"))
    (experiment / "2026-01-02_00-00-00" / "params").mkdir(parents=True)  # a start that crashed before iteration 0
    (experiment / "2026-01-02_00-00-00" / "console.log").write_text("crash\n")
    assert checkpoint.latest_run(str(experiment)) == str(experiment / "2026-01-01_00-00-00")


# --- agent settings are validated before any work ------------------------------------------------------------
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("agent.save_interval=0", "agent.save_interval=0: must be an integer >= 1"),
        ("agent.max_iterations=0", "agent.max_iterations=0: must be an integer >= 1"),
        ("agent.algorithm.learning_rate=abc", "Value 'abc' of type 'str' could not be converted to Float"),
        ("agent.algorithm.gamma=1.5", "agent.algorithm.gamma=1.5: must be in [0, 1]"),
        ("agent.algorithm.amp_cfg.loss_type=hinge", "agent.algorithm.amp_cfg.loss_type='hinge': allowed: lsgan, bce"),
        ("agent.actor.hidden_dims=[0]", "agent.actor.hidden_dims=[0]: must be a non-empty list of positive integers"),
    ],
)
def test_bad_agent_values_are_one_line_errors_before_any_work(tmp_path, capsys, override, message):
    log_root = tmp_path / "logs"
    task = AMP if "amp_cfg" in override else "RoboLab-Velocity-Flat-Go2-v0"
    assert train_main(["--task", task, "--log_root", str(log_root), override]) == 2
    assert message in one_error_line(capsys.readouterr().err)
    assert not log_root.exists()


# --- divergence ---------------------------------------------------------------------------------------------
def make_env(**kw):
    from robolab.envs import VelocityEnv
    from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

    cfg = Go2FlatEnvCfg(num_envs=32, seed=0, **kw)
    cfg.backend.num_threads = 1
    return VelocityEnv(cfg)


def test_finite_but_diverging_physics_never_reaches_observations_or_rewards():
    env = make_env(sim_dt=0.05)  # ten times the default step: the solver cannot hold the robot
    env.cfg.divergence.check_every = 10_000  # contained, not stopped, for this test
    g = torch.Generator().manual_seed(0)
    diverged = 0.0
    for _ in range(60):
        obs, rew, _, extras = env.step(torch.randn(32, env.num_actions, generator=g))
        for group in ("policy", "critic"):
            assert bool(torch.isfinite(obs[group]).all()) and float(obs[group].abs().max()) < 1e3, group
        assert bool(torch.isfinite(rew).all()) and float(rew.abs().max()) < 1e6
        diverged = float(extras["log"].get("Metrics/diverged_total", diverged))
    assert diverged > 0  # it did diverge, and was counted
    assert int(env.divergence.non_finite_total) <= diverged


def test_physics_that_cannot_work_stops_with_one_line_naming_the_setting():
    from robolab.envs.velocity_env import PhysicsDivergedError

    env = make_env(sim_dt=0.1)
    with pytest.raises(PhysicsDivergedError, match=r"env\.sim_dt=0\.1 \(the task's default is 0\.005\)"):
        for _ in range(2 * env.cfg.divergence.check_every):
            env.step(torch.zeros(32, env.num_actions))


@pytest.mark.slow
def test_training_with_a_diverging_step_keeps_its_losses_finite(tmp_path):
    log_root = str(tmp_path / "logs")
    run_dir = train(log_root, "env.sim_dt=0.05", "env.divergence.check_every=100000", iterations=3)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["diverged_resets"] > 0
    assert summary["latest_losses"] and all(np.isfinite(v) and abs(v) < 1e6 for v in summary["latest_losses"].values())
    res = run(
        train_cmd(
            *TINY, "--max_iterations", "5", "--log_root", log_root, "env.sim_dt=0.1", "env.divergence.check_every=10"
        )
    )
    assert res.returncode == 2 and "env.sim_dt=0.1" in one_error_line(res.stderr)


# --- files: umask, errors while writing, exports -----------------------------------------------------------
def test_files_are_written_with_the_process_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        checkpoint.save_atomic({"iter": 0}, str(tmp_path / "model_0.pt"))
        os.umask(0o077)
        checkpoint.save_atomic({"iter": 1}, str(tmp_path / "model_1.pt"))
    finally:
        os.umask(previous)
    assert (tmp_path / "model_0.pt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "model_1.pt").stat().st_mode & 0o777 == 0o600


def test_a_full_disk_is_one_line_and_keeps_every_earlier_checkpoint(tmp_path, capsys, monkeypatch):
    log_root = tmp_path / "logs"
    real_save = torch.save
    saves = []

    def save(obj, f, *args, **kwargs):
        saves.append(1)
        if len(saves) > 2:  # the third checkpoint finds the disk full
            raise OSError(28, "No space left on device")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    argv = [*TINY, "--max_iterations", "5", "--log_root", str(log_root)]
    assert train_main(argv) == 2
    assert "No space left on device" in one_error_line(capsys.readouterr().err)
    (run_dir,) = (log_root / "go2_flat").iterdir()
    kept = sorted(p.name for p in run_dir.glob("model_*"))
    assert kept == ["model_0.pt", "model_1.pt"] and all(checkpoint.load(str(run_dir / k)) for k in kept)
    assert not list(run_dir.glob("*.tmp"))


def test_an_unwritable_log_root_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the log root should be")
    assert train_main([*TINY, "--max_iterations", "1", "--log_root", str(blocker / "logs")]) == 2
    assert str(blocker) in one_error_line(capsys.readouterr().err)


def test_truncated_and_foreign_checkpoints_are_named(tmp_path):
    path = tmp_path / "model_1.pt"
    path.write_bytes(b"\x80\x04garbage")
    with pytest.raises(checkpoint.CheckpointError, match="model_1.pt.* is not a readable checkpoint"):
        checkpoint.load(str(path))
    torch.save([1, 2, 3], str(path))
    with pytest.raises(checkpoint.CheckpointError, match="holds a list, not a checkpoint dict"):
        checkpoint.load(str(path))


@pytest.mark.slow
def test_play_uses_the_runs_saved_config_and_exports_one_self_contained_onnx(tmp_path):
    log_root = str(tmp_path / "logs")
    run_dir = train(
        log_root, "env.observations.policy.history_length=2"
    )  # networks [32,32] and a 2-frame history, not the defaults
    play = run([sys.executable, PLAY, "--run", str(run_dir), "--num_envs", "4", "--steps", "5"])
    assert play.returncode == 0, play.stderr[-3000:]
    exported = run_dir / "exported"
    assert sorted(p.name for p in exported.iterdir()) == ["policy.onnx", "policy.pt"]  # no .data sidecar
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    shutil.copy(exported / "policy.onnx", alone / "policy.onnx")

    import onnxruntime as ort

    session = ort.InferenceSession(str(alone / "policy.onnx"))
    (inp,) = session.get_inputs()
    assert inp.shape[-1] == 2 * 48  # the saved history length reached the policy
    out = session.run(None, {inp.name: np.zeros((1, 96), dtype=np.float32)})[0]
    assert out.shape == (1, 12) and np.isfinite(out).all()
    # another task's checkpoint is refused by play too
    wrong = run([sys.executable, PLAY, "--task", AMP, "--run", str(run_dir), "--num_envs", "4", "--steps", "5"])
    assert wrong.returncode == 2 and "task is" in one_error_line(wrong.stderr)


# --- bad motion files and robot models ----------------------------------------------------------------------
def write_clip(path: Path, **changes) -> Path:
    data = dict(np.load(ROOT / "source" / "robolab" / "amp" / "data" / "go2_trot.npz"))
    data.update(changes)
    np.savez(path, **data)
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fps": np.array([50.0, 25.0])}, "fps must be one number"),
        ({"fps": np.array("fifty")}, "fps must be one number"),
        ({"joint_pos": np.float64(0.3)}, "joint_pos has shape (), expected (frames, joints)"),
        ({"joint_names": np.array("FL_hip_joint")}, "joint_names must be a list of names"),
        ({"base_lin_vel": np.full((201, 3), "x")}, "base_lin_vel holds <U1 values, expected numbers"),
    ],
)
def test_bad_motion_files_are_one_line_errors(tmp_path, capsys, changes, message):
    from robolab.cli.motion import main as motion_main

    path = write_clip(tmp_path / "clip.npz", **changes)
    assert motion_main(["inspect", str(path)]) == 2
    assert message in one_error_line(capsys.readouterr().err)


def test_a_text_file_named_npz_is_not_called_pickled_data(tmp_path, capsys):
    from robolab.cli.motion import main as motion_main

    path = tmp_path / "clip.npz"
    path.write_text("frame,hip\n0,0.1\n")
    assert motion_main(["inspect", str(path)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "is not an .npz archive" in line and "pickle" not in line


def test_a_malformed_mjcf_names_the_line(tmp_path, capsys):
    path = tmp_path / "robot.xml"
    path.write_text("<mujoco>\n  <worldbody>\n    <body name='a'>\n  </worldbody>\n</mujoco>\n")
    assert train_main(["--num_envs", "4", "--log_root", str(tmp_path / "logs"), f"env.robot.mjcf_path={path}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "is not a valid MJCF file" in line and "Line number=" in line


def test_the_readme_test_command_needs_nothing_outside_the_readme():
    readme = (ROOT / "README.md").read_text()
    fresh = readme[readme.index("## Run the tests") : readme.index("## Next")]
    for tool in ("docker-compose", "libegl-mesa0"):  # what the suite calls besides Python packages
        assert tool in fresh, f"the README's test command must install {tool}"


def test_nan_watch_names_the_first_output_with_nan_once_per_collection():
    from tensordict import TensorDict

    from robolab.runners.on_policy_runner import NanWatch

    def step(nan_in: str | None):
        obs = TensorDict({"policy": torch.zeros(4, 3), "critic": torch.zeros(4, 5)}, batch_size=[4])
        rewards, dones = torch.zeros(4), torch.zeros(4, dtype=torch.long)
        if nan_in == "critic":
            obs["critic"][2, 1] = float("nan")
        elif nan_in == "rewards":
            rewards[0] = float("nan")
        return obs, rewards, dones

    clean = NanWatch()
    for _ in range(3):
        clean.add(*step(None))
    clean.check()  # nothing to report
    watch = NanWatch()
    for nan_in in (None, "rewards", "critic", None):  # flags from any step of the collection stay set
        watch.add(*step(nan_in))
    with pytest.raises(ValueError, match=r"The observation group 'critic' returned by the environment contains NaN"):
        watch.check()


@pytest.mark.slow
def test_a_judged_checkpoint_runs_under_the_judges_commands_and_seed_not_the_saved_env_state(tmp_path):
    """A checkpoint keeps the env's curriculum state and random streams for a resume (command ranges, terrain
    levels); play, sim2sim and time_to_walk must not restore them over their own settings. Before, the saved ranges
    replaced play's: ``--terrain_eval`` sent every robot the training's random commands instead of 1 m/s ahead."""
    from robolab.cli import open_policy, parse_policy_flags
    from robolab.cli.play import build_parser

    logs = str(tmp_path / "logs")
    assert run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", logs)).returncode == 0
    saved = torch.load(next(Path(logs).glob("*/*/model_0.pt")), weights_only=True)["env_state"][0]
    assert saved["command.base_velocity.lin_vel_x"].tolist() == [-1.0, 1.0]  # the training's ranges are kept

    def judged(*overrides: str) -> torch.Tensor:
        args, rest, device = parse_policy_flags(build_parser(), ["--log_root", logs, "--num_envs", "8", *overrides])
        session = open_policy(args, rest, device)
        with session.closer, torch.inference_mode():
            session.env.reset()
            return session.env.command("base_velocity").clone()

    command = "env.commands.base_velocity.params"
    straight = judged(f"{command}.lin_vel_x=[0.7,0.7]", f"{command}.lin_vel_y=[0,0]", f"{command}.ang_vel_z=[0,0]",
                      f"{command}.standing_fraction=0")  # fmt: skip
    assert torch.allclose(straight, torch.tensor([0.7, 0.0, 0.0]).expand(8, 3), atol=1e-6)
    # the judge's --seed decides its draws, not the random streams saved with the checkpoint
    torch.testing.assert_close(judged("--seed", "3"), judged("--seed", "3"), rtol=0, atol=0)
    assert not torch.allclose(judged("--seed", "3"), judged("--seed", "4"), atol=1e-3)
