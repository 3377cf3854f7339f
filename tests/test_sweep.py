"""Hydra multirun sweeps: every job in its own process, a summary table, failures recorded not fatal."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

import hydra
import pytest
from omegaconf import OmegaConf

from conftest import run, train_cmd
from robolab.cli.train import main as train_main
from robolab.config import CONFIG_MODULE
from robolab.rl_cfg import register_schemas

SWEEP_TINY = [
    "--num_envs",
    "16",
    "--max_iterations",
    "2",
    "env.backend.num_threads=1",
    "agent.num_steps_per_env=8",
    "agent.actor.hidden_dims=[32]",
    "agent.critic.hidden_dims=[32]",
]


def read_rows(sweep_dir: Path) -> list[dict]:
    with open(sweep_dir / "summary.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_two_by_two_sweep_gives_four_runs_and_a_four_row_summary(tmp_path):
    sweep_dir = tmp_path / "sweep"
    res = run(
        train_cmd(
            "-m", "--sweep_dir", str(sweep_dir), *SWEEP_TINY, "agent.algorithm.learning_rate=1e-3,3e-4", "seed=1,2"
        ),
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_dirs = [p.parent for p in sweep_dir.glob("*/logs/go2_flat/*/summary.json")]
    assert len(run_dirs) == 4
    rows = read_rows(sweep_dir)
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    assert {r["overrides"].split(" ")[-2:].__str__() for r in rows} == {
        str([f"agent.algorithm.learning_rate={lr}", f"seed={s}"]) for lr in ("0.001", "0.0003") for s in (1, 2)
    }
    # each job's own seed reached its own process
    seeds = sorted(OmegaConf.load(d / "params" / "agent.yaml").seed for d in run_dirs)
    assert seeds == [1, 1, 2, 2]
    md = (sweep_dir / "summary.md").read_text().strip().splitlines()
    assert len(md) == 2 + 4


@pytest.mark.slow
def test_a_failing_job_is_reported_and_the_others_still_run(tmp_path):
    sweep_dir = tmp_path / "sweep"
    res = run(
        train_cmd("-m", "--sweep_dir", str(sweep_dir), *SWEEP_TINY, "agent.algorithm.learning_rate=1e-3,-1,3e-4"),
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    rows = read_rows(sweep_dir)
    assert [r["status"] for r in rows] == ["ok", "failed", "ok"]
    assert rows[1]["returncode"] == "2" and "learning rate" in rows[1]["error"].lower()
    assert rows[2]["iterations"] == "2"


@pytest.mark.slow
def test_each_sweep_job_can_itself_be_distributed(tmp_path):
    sweep_dir = tmp_path / "sweep"
    res = run(
        train_cmd(
            "-m",
            "--sweep_dir",
            str(sweep_dir),
            "--distributed",
            "--device",
            "cpu",
            "--nproc_per_node",
            "2",
            *SWEEP_TINY,
            "seed=5,6",
        ),
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    rows = read_rows(sweep_dir)
    assert [r["world_size"] for r in rows] == ["2", "2"] and all(r["status"] == "ok" for r in rows)


def test_slurm_launcher_config_resolves_to_submitit():
    register_schemas()
    with hydra.initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        cfg = hydra.compose("train", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    # a job asks for nothing a node without GPUs lacks (its size comes from hydra.launcher.* on the command line)
    assert launcher.gpus_per_node is None and launcher.cpus_per_task is None and launcher.mem_gb is None
    assert launcher.tasks_per_node == 1 and launcher.nodes == 1
    hydra.utils.get_class(launcher._target_)  # the plugin is installed and importable


@pytest.mark.slow
def test_jobs_run_side_by_side_with_jobs_per_node_and_the_table_is_unchanged(tmp_path):
    import json

    sweep_dir = tmp_path / "sweep"
    res = run(
        train_cmd("-m", "--jobs_per_node", "2", "--sweep_dir", str(sweep_dir), *SWEEP_TINY, "seed=1,2"), timeout=600
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "2 jobs side by side" in res.stdout
    results = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/job_result.json"))]
    assert [r["status"] for r in results] == ["ok", "ok"]
    assert sorted(r["slot"] for r in results) == [0, 1]  # each held its own slot
    (a, b) = results
    assert a["started"] < b["ended"] and b["started"] < a["ended"], "the two jobs overlapped in time"
    rows = read_rows(sweep_dir)
    assert [r["job"] for r in rows] == ["0", "1"]
    assert (sweep_dir / "summary.md").read_text().splitlines()[0].startswith("| job | overrides | status |")


def test_each_side_by_side_job_sees_only_its_own_gpus():
    from robolab.sweep import child_env

    gpus = ["0", "1", "2", "3"]  # CUDA_VISIBLE_DEVICES names, in the order the node exposes them
    assert [child_env(slot, 1, gpus)[1] for slot in range(4)] == ["0", "1", "2", "3"]
    assert [child_env(slot, 2, ["4", "5", "6", "7"])[1] for slot in range(2)] == ["4,5", "6,7"]
    _, devices = child_env(0, 1, [])  # a CPU node: the child's environment is left as it is
    assert devices is None
    with pytest.raises(ValueError, match="sweep slot 2 needs 2 GPUs but the node has 4: lower --jobs_per_node"):
        child_env(2, 2, gpus)


def test_slots_are_exclusive(tmp_path):
    from robolab.sweep import job_slot

    with job_slot(tmp_path, 2) as first, job_slot(tmp_path, 2) as second:
        assert {first, second} == {0, 1}
    with job_slot(tmp_path, 2) as again:
        assert again == 0  # released slots are free again


def test_every_train_flag_is_passed_to_sweep_jobs_or_refused_by_sweeps():
    """No flag is dropped without a word: a new flag of train.py must be classified here."""
    from robolab import sweep
    from robolab.cli.train import build_parser

    classified = {
        *sweep.FORWARDED,
        *sweep.FORWARDED_SWITCHES,
        *sweep.NOT_IN_SWEEPS,
        *sweep.SWEEP_ONLY,
        *sweep.BY_THE_SWEEP,
        "help",
        "headless",
    }
    flags = {action.dest for action in build_parser()._actions if action.option_strings}
    assert flags <= classified, f"unclassified train.py flags: {sorted(flags - classified)}"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-m", "seed=1,2", "--resume", "latest"], "--resume: a sweep trains a new run per point"),
        (["-m", "seed=1,2", "--load_run", "x"], "--load_run: a sweep trains a new run per point"),
        (["--jobs_per_node", "2"], "--jobs_per_node: a sweep setting; add -m"),
        (["--sweep_dir", "/tmp/s"], "--sweep_dir: a sweep setting; add -m"),
        (["--nproc_per_node", "0"], "argument --nproc_per_node: 0: must be an integer >= 1"),
    ],
)
def test_sweep_flags_out_of_place_are_one_line_errors(tmp_path, argv, message):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = train_main([*argv, "--log_root", str(tmp_path / "logs")])
    assert code == 2 and message in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
    assert not (tmp_path / "logs").exists()


def test_a_sweep_job_gets_the_flags_it_was_given(tmp_path):
    from robolab import sweep
    from robolab.cli.train import parse_flags

    args, _ = parse_flags(
        ["-m", "--teacher_checkpoint", "t.pt", "--video_interval", "50", "--log_project_name", "p", "seed=1,2"]
    )
    cmd = sweep.child_command(args, ["seed=1"], str(tmp_path))
    for flag, value in (("--teacher_checkpoint", "t.pt"), ("--video_interval", "50"), ("--log_project_name", "p")):
        assert cmd[cmd.index(flag) + 1] == value
