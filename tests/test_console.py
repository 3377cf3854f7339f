"""What the programs print: quiet by default, everything with --verbose, progress bars, no MUJOCO_LOG.TXT."""

from __future__ import annotations

import argparse
import io
import logging
import subprocess
import sys
import textwrap

import mujoco
import pytest

from conftest import ROOT, TINY, clean_env, run, train_cmd
from robolab import console
from robolab.cli import sim2sim as sim2sim_cli
from robolab.runners.logger import IterationRecord, unit_of
from robolab.sweep import follow_iterations

PLAY = str(ROOT / "scripts" / "play.py")


@pytest.mark.slow
def test_training_prints_one_line_per_iteration_and_everything_with_verbose(log_root):
    quiet = run(train_cmd(*TINY, "--max_iterations", "3", "--log_root", log_root))
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    lines = [line for line in quiet.stdout.splitlines() if line.startswith("[robolab] it ")]
    assert [line.split(" | ")[0] for line in lines] == ["[robolab] it 1/3", "[robolab] it 2/3", "[robolab] it 3/3"]
    assert all("steps/s" in line and "ETA" in line for line in lines)
    # nothing of rsl_rl's set-up chatter or its 20-line block per iteration
    for chatter in ("Actor Model", "Resolved observation sets", "Storing git diff", "Learning iteration"):
        assert chatter not in quiet.stdout, chatter
    assert len(quiet.stdout.splitlines()) <= 10, quiet.stdout

    loud = run(train_cmd(*TINY, "--max_iterations", "3", "--log_root", log_root, "--verbose"))
    assert loud.returncode == 0, loud.stderr[-2000:]
    for block in ("Actor Model", "Critic Model", "Learning iteration 2/3", "Mean action std"):
        assert block in loud.stdout, block
    assert "[robolab] it " not in loud.stdout


def test_verbose_reaches_the_processes_a_program_starts(monkeypatch):
    monkeypatch.delenv(console.VERBOSE_ENV, raising=False)
    parser = sim2sim_cli.build_parser()
    parser.parse_known_args(["--target", "x"])
    assert not console.verbose()
    parser.parse_known_args(["--target", "x", "--verbose"])
    child = subprocess.run(
        [sys.executable, "-c", "from robolab import console; print(console.verbose())"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.stdout.strip() == "True"


def test_the_verbose_block_says_what_a_termination_number_counts():
    assert unit_of("Episode_Termination/base_contact") == " episodes per step with an end"
    assert unit_of("Metrics/diverged_total") == " envs since the start"
    assert unit_of("Metrics/fall_rate") == ""
    from robolab.runners.logger import TrainingLogger

    logger = TrainingLogger.__new__(TrainingLogger)  # the block needs only these fields
    logger.cfg, logger.total_steps, logger.total_s, logger.steps_per_iteration = {}, 10, 1.0, 10
    record = IterationRecord(0, 0, 1, 0.5, 0.5, {}, 1e-3, 1.0, {"Episode_Termination/time_out": 2.0})
    assert "Episode_Termination/time_out: 2.0000 episodes per step with an end" in logger._console_block(record)


def test_a_progress_bar_shows_where_asked_and_is_a_no_op_elsewhere(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for setting, file, shown in [
        ("", Terminal(), True),
        ("", io.StringIO(), False),  # a log file: no bar unless asked
        ("1", io.StringIO(), True),
        ("0", Terminal(), False),
    ]:
        monkeypatch.setenv(console.PROGRESS_ENV, setting)
        with console.progress(20, "judging", file=file) as bar:
            bar.update(20)
        assert ("judging:" in file.getvalue()) == shown, (setting, file.getvalue())
    monkeypatch.setenv(console.PROGRESS_ENV, "1")
    # only rank 0 draws, whichever launcher gave the rank
    for launcher in ({"WORLD_SIZE": "2", "RANK": "1"}, {"SLURM_NTASKS": "2", "SLURM_PROCID": "1"}):
        with monkeypatch.context() as m:
            for name, value in launcher.items():
                m.setenv(name, value)
            file = io.StringIO()
            with console.progress(5, "judging", file=file) as bar:
                bar.update(5)
            assert file.getvalue() == "", launcher
    monkeypatch.setenv(console.PROGRESS_ENV, "yes")
    with pytest.raises(ValueError, match="ROBOLAB_PROGRESS=yes: must be 0"):
        console.progress(5)


@pytest.mark.slow
def test_play_shows_a_bar_with_rate_and_eta_when_asked_and_prints_no_networks(log_root):
    assert run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", log_root)).returncode == 0
    play = [sys.executable, PLAY, "--num_envs", "8", "--steps", "30", "--log_root", log_root, "--no_export"]
    shown = run(play, env=clean_env(ROBOLAB_PROGRESS="1"))
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "evaluating:" in shown.stderr and "/30 [" in shown.stderr and "step/s" in shown.stderr
    assert "Actor Model" not in shown.stdout
    hidden = run(play)  # not a terminal: no bar in the captured output
    assert hidden.returncode == 0 and "evaluating" not in hidden.stderr


def test_a_sweep_job_s_bar_follows_the_child_s_iterations(tmp_path, monkeypatch):
    log = tmp_path / "train.log"
    log.write_text("")
    script = textwrap.dedent(
        f"""
        import time
        with open({str(log)!r}, "a") as f:
            for i in range(1, 5):
                print(f"[robolab] it {{i}}/4 | 1k steps/s", file=f, flush=True)
                time.sleep(0.2)
        raise SystemExit(3)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    monkeypatch.setenv(console.PROGRESS_ENV, "1")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert follow_iterations(child, log, "job 0", show=True, poll_s=0.05) == 3  # the child's own exit code
    assert "job 0:" in err.getvalue() and "/4 [" in err.getvalue()  # the bar learnt the child's total


MUJOCO_WARNS = """
import mujoco, numpy as np
from robolab.assets import load_robot
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg
robot = load_robot(Go2FlatEnvCfg().robot)
data = mujoco.MjData(robot.model)
data.qvel[:] = 1e12  # unstable: MuJoCo warns, and writes MUJOCO_LOG.TXT by default
mujoco.mj_step(robot.model, data)
print("warnings:", data.warning[mujoco.mjtWarning.mjWARN_BADQVEL].number)
"""


def test_mujoco_writes_no_log_file_in_the_working_directory(tmp_path):
    res = run([sys.executable, "-c", MUJOCO_WARNS], cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "warnings: 1" in res.stdout  # the warning happened
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert "simulation is unstable" not in res.stdout + res.stderr  # counted by the env, logged at debug level


def test_mujoco_warnings_go_to_logging_once_per_kind(caplog):
    console.route_mujoco_warnings()
    console.route_mujoco_warnings()  # idempotent
    handler = mujoco.get_mju_user_warning()
    with caplog.at_level(logging.DEBUG, logger=console.MUJOCO_LOGGER):
        handler("Nan, Inf or huge value in QACC at DOF 0. The simulation is unstable. Time = 0.6050.")
        handler("Pre-allocated buffer of 12 elements is too small")
        handler("Pre-allocated buffer of 40 elements is too small")  # the same kind: once
    levels = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert levels[0][0] == "DEBUG"
    assert [m for lvl, m in levels if lvl == "WARNING"] == ["MuJoCo: Pre-allocated buffer of 12 elements is too small"]


def _sim2sim_args(**changes) -> argparse.Namespace:
    args = sim2sim_cli.build_parser().parse_args(["--target", "RoboLab-Velocity-Flat-Go2-v0"])
    for key, value in changes.items():
        setattr(args, key, value)
    return args


def test_sim2sim_results_of_different_judgements_get_different_files():
    ckpt = "/runs/go2/model_99.pt"
    plain = sim2sim_cli.result_name(_sim2sim_args(), ckpt, [])
    assert plain == "model_99_RoboLab-Velocity-Flat-Go2-v0.json"
    names = {
        plain,
        sim2sim_cli.result_name(_sim2sim_args(), "/runs/go2/model_50.pt", []),
        sim2sim_cli.result_name(_sim2sim_args(), ckpt, ["env.backend=warp"]),
        sim2sim_cli.result_name(_sim2sim_args(latency_ms=20.0), ckpt, []),
        sim2sim_cli.result_name(_sim2sim_args(latency_ms=40.0), ckpt, []),
        sim2sim_cli.result_name(_sim2sim_args(seed=3), ckpt, []),
        sim2sim_cli.result_name(_sim2sim_args(num_envs=256), ckpt, []),
        sim2sim_cli.result_name(_sim2sim_args(task="RoboLab-Velocity-Rough-Go2-v0"), ckpt, []),
    }
    assert len(names) == 8
    long = sim2sim_cli.result_name(_sim2sim_args(), ckpt, [f"env.rewards.term_{i}.weight=0.{i}" for i in range(30)])
    other = sim2sim_cli.result_name(_sim2sim_args(), ckpt, [f"env.rewards.term_{i}.weight=0.{i}" for i in range(31)])
    assert len(long) <= 160 and long != other and "/" not in long
