"""Videos during training, W&B and Neptune writers (offline), and play.py's Isaac Lab flags and recurrent resets."""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT, TINY, clean_env, run, train_cmd
from robolab import evaluation

PLAY = str(ROOT / "scripts" / "play.py")
SCALARS = ("Loss/value", "Loss/surrogate", "Perf/total_fps", "Policy/mean_std")


def only_run(experiment_dir: Path) -> Path:
    (found,) = [p for p in experiment_dir.iterdir() if p.is_dir()]
    return found


def frames(path: Path) -> int:
    import imageio.v3 as iio

    return sum(1 for _ in iio.imiter(path))


@pytest.mark.slow
def test_training_records_clips_every_interval_and_wandb_gets_scalars_and_videos(tmp_path):
    env = clean_env(WANDB_MODE="offline", WANDB_DIR=str(tmp_path), WANDB_SILENT="true", MUJOCO_GL="egl")
    args = [*TINY, "--max_iterations", "3", "--log_root", str(tmp_path / "logs"), "--experiment_name", "media"]
    video = ["--video", "--video_length", "5", "--video_interval", "10"]
    res = run(train_cmd(*args, *video, "--logger", "wandb", "--log_project_name", "robolab-test"), env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run(tmp_path / "logs" / "media")
    clips = sorted((run_dir / "videos" / "train").glob("*.mp4"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    # 3 iterations x 8 steps = 24 env steps: clips start at steps 0, 10 and 20 (the last cut short by the end)
    assert [p.name for p in clips] == [f"rl-video-step-{s}.mp4" for s in (0, 10, 20)]
    assert [frames(p) for p in clips] == [5, 5, 4]
    assert not list((run_dir / "videos" / "train").glob(".*")), "no partial file left behind"
    (wandb_run,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*"))
    records = next(Path(wandb_run).glob("run-*.wandb")).read_bytes()
    for tag in SCALARS:  # each iteration's scalar went to W&B (3 history rows at least)
        assert records.count(tag.encode()) >= 3, tag
    assert b"robolab-test" in records, "the project name"
    assert len(list(Path(wandb_run, "files", "media", "videos").glob("*.mp4"))) >= 2
    assert (Path(wandb_run) / "files" / "model_2.pt").exists()


@pytest.mark.slow
def test_neptune_offline_gets_every_iterations_scalars(tmp_path):
    env = clean_env(NEPTUNE_MODE="offline", NEPTUNE_API_TOKEN="ANONYMOUS", NEPTUNE_USERNAME="robolab")
    args = [*TINY, "--max_iterations", "2", "--log_root", str(tmp_path / "logs"), "--logger", "neptune"]
    res = run(train_cmd(*args), env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    logged: dict[str, int] = {}
    for line in next(tmp_path.glob(".neptune/offline/*/data-1.log")).read_text().splitlines():
        op = json.loads(line)["obj"]
        if op["type"] == "LogFloats":
            key = "/".join(op["path"])
            logged[key] = logged.get(key, 0) + len(op["values"])
    for tag in SCALARS:
        assert logged.get(tag) == 2, (tag, sorted(logged))


@pytest.mark.slow
def test_play_selects_by_experiment_run_and_checkpoint_regex(tmp_path, capsys):
    logs = str(tmp_path / "logs")
    assert run(train_cmd(*TINY, "--max_iterations", "3", "--log_root", logs, "--experiment_name", "pp")).returncode == 0
    cmd = [sys.executable, PLAY, "--log_root", logs, "--experiment_name", "pp", "--num_envs", "2", "--steps", "5"]
    res = run([*cmd, "--checkpoint", "model_1", "--no_export", "--real-time"])
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(res.stdout[res.stdout.index("{\n") :])
    assert result["checkpoint"].endswith("model_1.pt") and result["steps"] == 5
    from robolab.cli.play import main as play_main  # the refusals in this process (no env is built)

    assert play_main([*cmd[2:], "--load_run", "nothing-matches"]) == 2
    assert "no checkpoint matching --load_run='nothing-matches'" in capsys.readouterr().err
    assert play_main([*cmd[2:], "--chekpoint", "x"]) == 2
    assert "did you mean --checkpoint?" in capsys.readouterr().err

    # time_to_walk.py judges every checkpoint of the run in order, as play.py does, and stops at the first that walks
    from robolab.cli.time_to_walk import time_to_walk

    judge = ["--log_root", logs, "--experiment_name", "pp", "--num_envs", "4", "--device", "cpu"]
    judge += ["--launched_at", "100", "env.episode_length_s=0.2", "env.backend.num_threads=1"]
    never = time_to_walk([*judge, "--max_error", "0"])
    assert never["time_to_walk_s"] is None and [r["iteration"] for r in never["judged"]] == [0, 1, 2]
    assert all(r["steps"] == 10 and not r["walks"] for r in never["judged"])
    first = time_to_walk([*judge, "--max_error", "100", "--output", str(tmp_path / "walk.json")])
    model_0 = Path(first["run"], "model_0.pt")
    assert first["first_walking"]["iteration"] == 0 and len(first["judged"]) == 1
    assert first["time_to_walk_s"] == pytest.approx(model_0.stat().st_mtime - 100, abs=0.01)
    assert json.loads((tmp_path / "walk.json").read_text())["time_to_walk_s"] == first["time_to_walk_s"]


# --- a recurrent policy's memory starts afresh with each episode ---------------------------------------------------
class EpisodeEnv:
    """Constant observations; every env's episode ends after ``length`` steps (env 1's first one after 3)."""

    def __init__(self, length: int = 5):
        from tensordict import TensorDict

        self.num_envs, self.device, self.step_dt, self.length = 2, torch.device("cpu"), 0.0, length
        self.t = torch.tensor([0, 2])
        self.obs = TensorDict({"policy": torch.ones(2, 3)}, batch_size=[2])
        self.last_tracking_error = torch.zeros(2)

    def get_observations(self):
        return self.obs

    def step(self, actions):
        self.t += 1
        dones = self.t % self.length == 0
        return self.obs, torch.zeros(2), dones.float(), {"time_outs": dones.clone()}


def rnn_student():
    """An RNN student as a distillation run builds it (rsl_rl's RNNModel: ``agent.student.class_name=RNNModel``)."""
    from tensordict import TensorDict

    from robolab.rsl_rl_api import resolve_callable

    obs = TensorDict({"policy": torch.ones(2, 3)}, batch_size=[2])
    torch.manual_seed(0)
    model = resolve_callable("rsl_rl.models:RNNModel")(
        obs, {"student": ["policy"]}, "student", 2, hidden_dims=[8], rnn_hidden_dim=8, rnn_type="gru"
    )
    return model.eval()


class Recorder:
    """The policy as play.py calls it, keeping its actions; ``reset`` is forwarded only when asked."""

    def __init__(self, policy, forward_reset: bool):
        self.policy, self.actions = policy, []
        if forward_reset:
            self.reset = policy.reset

    def __call__(self, obs):
        self.actions.append(self.policy(obs).clone())
        return self.actions[-1]


def actions_of(forward_reset: bool, steps: int = 12) -> torch.Tensor:
    recorder = Recorder(rnn_student(), forward_reset)
    evaluation.evaluate(EpisodeEnv(), recorder, steps)
    return torch.stack(recorder.actions)


def test_a_recurrent_policy_is_reset_when_its_episode_ends():
    with_reset, without = actions_of(forward_reset=True), actions_of(forward_reset=False)
    # constant inputs: with resets, each env's actions repeat with its episodes (env 0 every 5 steps from step 0,
    # env 1 from its first reset after step 3)
    torch.testing.assert_close(with_reset[5:10, 0], with_reset[0:5, 0])
    torch.testing.assert_close(with_reset[8:12, 1], with_reset[3:7, 1])
    # without resets the memory carries over and the second episode acts differently: the reset matters
    assert not torch.allclose(without[5:10, 0], without[0:5, 0], atol=1e-4)
    torch.testing.assert_close(with_reset[:3], without[:3])  # identical until the first episode ends


def test_the_programs_import_no_mujoco_before_they_pick_its_opengl_backend():
    """MuJoCo reads MUJOCO_GL when it is imported: a program that imported it while reading its configs could no
    longer choose EGL for --video (it would try GLFW and fail on a headless node)."""
    import subprocess
    import sys

    code = (
        "import sys, robolab.cli.train, robolab.cli.play, robolab.cli.sim2sim, robolab.config, robolab.tasks; "
        "sys.exit('mujoco imported' if 'mujoco' in sys.modules else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
