"""Isaac Lab's rsl_rl flags on robolab's train.py and play.py, with Isaac Lab's meaning: resume, checkpoint selection,
seeds, log layout, loggers and the one-line errors of bad flag values."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import yaml

from conftest import ROOT, TINY, clean_env, run, train_cmd
from robolab import runs
from robolab.cli.train import build_parser, parse_flags

PLAY = str(ROOT / "scripts" / "play.py")


def play_cmd(*args: str) -> list[str]:
    import sys

    return [sys.executable, PLAY, *args]


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def only_run(experiment_dir: Path) -> Path:
    found = [p for p in experiment_dir.iterdir() if p.is_dir()]
    assert len(found) == 1, found
    return found[0]


# --- flags: every Isaac Lab flag is known; an unknown one is a one-line error naming the closest -----------------
ISAACLAB_RSL_RL_FLAGS = [
    "--video",
    "--video_length",
    "--video_interval",
    "--num_envs",
    "--task",
    "--agent",
    "--seed",
    "--max_iterations",
    "--distributed",
    "--export_io_descriptors",
    "--experiment_name",
    "--run_name",
    "--resume",
    "--load_run",
    "--checkpoint",
    "--logger",
    "--log_project_name",
    "--headless",
    "--device",
]


def test_every_isaaclab_rsl_rl_flag_is_in_train_help():
    known = {o for action in build_parser()._actions for o in action.option_strings}
    assert set(ISAACLAB_RSL_RL_FLAGS) <= known, set(ISAACLAB_RSL_RL_FLAGS) - known


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [("--max_iteratons", "--max_iterations"), ("--vidoe", "--video"), ("--lod_run", "--load_run")],
)
def test_an_unknown_flag_names_the_closest_known_one(typo, suggestion):
    with pytest.raises(ValueError, match=f"unknown flag {typo}; did you mean {suggestion}"):
        parse_flags([typo, "3"])


def test_unknown_flag_from_the_command_line_is_one_line_not_a_hydra_trace(tmp_path):
    res = run(train_cmd("--num_nevs", "4", "--log_root", str(tmp_path)))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "error: unknown flag --num_nevs; did you mean --num_envs? (arguments without -- are Hydra overrides: key=value)"
    ]
    assert "Lexer" not in res.stderr and not (tmp_path / "go2_flat").exists()


def test_bare_resume_before_an_override_means_latest():
    args, overrides = parse_flags(["--resume", "agent.algorithm.learning_rate=1e-4"])
    assert args.resume == "latest" and overrides == ["agent.algorithm.learning_rate=1e-4"]
    args, _ = parse_flags(["--resume", "--max_iterations", "5"])
    assert args.resume == "latest" and args.max_iterations == 5
    args, _ = parse_flags(["--resume", "auto"])
    assert args.resume == "auto"


# --- --max_iterations: new run, user resume (N more), restart (planned final kept) -------------------------------
def test_schedule_semantics():
    new = runs.plan_schedule(0, restart=False, recorded_final=None, flag=None, configured=1500)
    assert (new.start, new.final) == (0, 1500)
    assert runs.plan_schedule(0, False, None, 300, 1500).final == 300
    # a user's --resume --max_iterations 500 after 300 iterations: 500 more, as in Isaac Lab
    assert runs.plan_schedule(300, False, 300, 500, 1500).final == 800
    # the same command line restarted by a launcher: the planned final iteration, however often it restarts
    assert runs.plan_schedule(120, True, 300, 300, 1500).final == 300
    # a plain --resume without a count finishes the planned run
    assert runs.plan_schedule(120, False, 300, None, 1500).final == 300
    assert "resuming at iteration 120, training until 300" in runs.plan_schedule(120, True, 300, 300, 1).describe()


@pytest.mark.slow
def test_resume_trains_n_more_but_a_restart_keeps_the_planned_end(tmp_path):
    logs = str(tmp_path)
    base = [*TINY, "--log_root", logs, "--experiment_name", "sched"]
    assert run(train_cmd(*base, "--max_iterations", "2")).returncode == 0
    run_dir = only_run(tmp_path / "sched")
    # Isaac Lab's habit: --resume --max_iterations 2 trains 2 more (iterations 2 and 3)
    res = run(train_cmd(*base, "--resume", "--max_iterations", "2"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "resuming at iteration 2, training until 4" in res.stdout
    assert summary(run_dir)["iterations"] == 4 and (run_dir / "model_3.pt").exists()
    # params/ keeps the run as it started; the resume's record says what it changed
    assert yaml.safe_load((run_dir / "params" / "agent.yaml").read_text())["max_iterations"] == 2
    sessions = [json.loads(line) for line in (run_dir / "sessions.jsonl").read_text().splitlines()]
    assert [s["final_iteration"] for s in sessions] == [2, 4]
    assert sessions[1]["changed"]["agent.max_iterations"] == [2, 4]
    # torchrun restarting the same command: the run already reached its planned end; nothing more is trained
    res = run(train_cmd(*base, "--resume", "--max_iterations", "2"), env=clean_env(TORCHELASTIC_RESTART_COUNT="1"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "already reached its final iteration 4" in res.stdout
    assert not (run_dir / "model_5.pt").exists()
    assert torch.load(run_dir / "model_3.pt", weights_only=False)["final_iteration"] == 4


@pytest.mark.slow
def test_load_run_and_checkpoint_regexes_pick_the_run_and_file(tmp_path):
    logs = str(tmp_path)
    base = [*TINY, "--log_root", logs, "--experiment_name", "pick"]
    for name in ("alpha", "beta"):
        assert (
            run(train_cmd(*base, "--max_iterations", "3", "--run_name", name, "agent.save_interval=1")).returncode == 0
        )
    alpha = next((tmp_path / "pick").glob("*_alpha"))
    # --load_run picks the older run; --checkpoint picks model_1 in it; training continues from iteration 2
    res = run(train_cmd(*base, "--load_run", ".*_alpha", "--checkpoint", "model_1.pt", "--max_iterations", "1"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"resumed {alpha / 'model_1.pt'}" in res.stdout
    assert "resuming at iteration 2, training until 3" in res.stdout
    res = run(train_cmd(*base, "--load_run", "gamma", "--max_iterations", "1"))
    assert res.returncode == 2
    assert "no checkpoint matching --load_run='gamma'" in res.stderr


def test_checkpoint_selection_is_isaaclabs(tmp_path):
    for run_name, its in (("2026-01-01_00-00-00_a", (0, 5, 10)), ("2026-02-01_00-00-00_b", (0, 20))):
        (tmp_path / run_name).mkdir()
        for it in its:
            (tmp_path / run_name / f"model_{it}.pt").write_bytes(b"")
    assert runs.select_checkpoint(str(tmp_path)).endswith("_b/model_20.pt")
    assert runs.select_checkpoint(str(tmp_path), load_run=".*_a").endswith("_a/model_10.pt")
    assert runs.select_checkpoint(str(tmp_path), checkpoint_pattern="model_5").endswith("_a/model_5.pt")
    with pytest.raises(ValueError, match=r"--load_run='\[': not a regular expression"):
        runs.select_checkpoint(str(tmp_path), load_run="[")


# --- seed, names, agent entry points, IO descriptors, log layout -------------------------------------------------
@pytest.mark.slow
def test_random_seed_is_drawn_logged_and_saved(tmp_path):
    res = run(train_cmd(*TINY, "--max_iterations", "1", "--seed", "-1", "--log_root", str(tmp_path)))
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(x for x in res.stdout.splitlines() if "seed -1: drew seed" in x)
    drawn = int(line.split("drew seed ")[1].split()[0])
    run_dir = only_run(tmp_path / "go2_flat")
    assert yaml.safe_load((run_dir / "params" / "agent.yaml").read_text())["seed"] == drawn
    res = run(train_cmd(*TINY, "--max_iterations", "1", "--seed", "-2", "--log_root", str(tmp_path)))
    assert res.returncode == 2 and "--seed=-2: must be in [0, 2**62], or -1 for a random seed" in res.stderr


@pytest.mark.slow
def test_isaaclab_log_layout_names_io_descriptors_and_agent_entry_point(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default log root, relative like Isaac Lab's
    args = [*TINY, "--max_iterations", "1", "--experiment_name", "mine", "--run_name", "try1"]
    amp = ["agent.algorithm.amp_cfg.batch_size=64", "agent.algorithm.amp_cfg.num_disc_updates=2"]
    res = run(train_cmd(*args, *amp, "--export_io_descriptors", "--agent", "rsl_rl_amp_cfg_entry_point"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    run_dir = only_run(tmp_path / "logs" / "rsl_rl" / "mine")
    assert run_dir.name.endswith("_try1") and len(run_dir.name) == len("2026-01-01_00-00-00_try1")
    for f in ("params/env.yaml", "params/agent.yaml", "params/io_descriptors.yaml", "model_0.pt"):
        assert (run_dir / f).is_file(), f
    assert list((run_dir / "git").glob("*.diff")), "the git state of robolab's checkout"
    io = yaml.safe_load((run_dir / "params" / "io_descriptors.yaml").read_text())
    env = yaml.safe_load((run_dir / "params" / "env.yaml").read_text())
    assert io["actions"]["joint_names"] == env["robot"]["joint_names"]
    assert [t["name"] for t in io["observations"]["policy"]["terms"]][:3] == [
        "base_lin_vel",
        "base_ang_vel",
        "projected_gravity",
    ]
    assert io["scene"]["dt"] == pytest.approx(env["sim_dt"] * env["decimation"], rel=1e-6)
    # --agent rsl_rl_amp_cfg_entry_point trained the task's AMP agent
    agent = yaml.safe_load((run_dir / "params" / "agent.yaml").read_text())
    assert agent["algorithm"]["class_name"].endswith("PPOAMP")
    res = run(train_cmd(*TINY, "--agent", "nope", "--log_root", str(tmp_path)))
    assert res.returncode == 2 and "--agent='nope': RoboLab-Velocity-Flat-Go2-v0 has the agent configs" in res.stderr


def test_missing_logger_settings_fail_before_any_work(tmp_path):
    res = run(train_cmd(*TINY, "--logger", "neptune", "--log_root", str(tmp_path)))
    assert res.returncode == 2
    assert "--logger neptune: set NEPTUNE_API_TOKEN and NEPTUNE_USERNAME" in res.stderr
    assert not os.path.exists(tmp_path / "go2_flat")


# --- bad values of the new flags: one line naming the value and what is allowed --------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"video_length": 0}, "--video_length=0: must be a positive integer"),
        ({"video_interval": -5}, "--video_interval=-5: must be a positive integer"),
        ({"logger": "mlflow"}, "--logger='mlflow': allowed: tensorboard, wandb, neptune"),
    ],
)
def test_bad_flag_values_are_named(options, message):
    from robolab.launch import TrainOptions

    with pytest.raises(ValueError, match=message):
        TrainOptions(**options).overrides()


def test_logger_config_is_checked_before_any_work(monkeypatch):
    import importlib.util

    from robolab.launch import log_writer_cfg

    with pytest.raises(ValueError, match="agent.logger='mlflow': allowed: tensorboard, wandb, neptune"):
        log_writer_cfg("mlflow", None, "exp")
    assert log_writer_cfg("wandb", None, "exp") == {"class_name": "WandbLogWriter", "project_name": "exp"}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(ValueError, match=r"--logger wandb: the wandb package is not installed \(pip install"):
        log_writer_cfg("wandb", "proj", "exp")


def test_jobs_per_node_must_be_positive():
    import argparse

    from robolab.sweep import jobs_per_node

    with pytest.raises(ValueError, match="--jobs_per_node=0: must be a positive integer"):
        jobs_per_node(argparse.Namespace(jobs_per_node=0, distributed=False, nproc_per_node=None, device="cpu"))
    assert (
        jobs_per_node(argparse.Namespace(jobs_per_node=None, distributed=False, nproc_per_node=None, device="cpu")) == 1
    )
