"""Nothing lost, nothing outside its place, nobody let in (issue 27): a run is found by its exact name, held by one
job at a time, and keeps every session's records; names and outputs stay where they are asked to go; a run
directory's files cannot choose code to import; a stop request ends even a long update within seconds."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import TINY, clean_env, read_until, run, train_cmd
from robolab import checkpoint, files, runs
from robolab.amp.motion import MotionFormatError, read_arrays
from robolab.cli.motion import main as motion_main
from robolab.cli.play import main as play_main
from robolab.cli.train import main as train_main

QUICK = [*TINY, "--max_iterations", "2"]


def train(log_root: Path, *args: str) -> subprocess.CompletedProcess:
    res = run(train_cmd(*QUICK, "--log_root", str(log_root), *args))
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def run_dirs(log_root: Path, experiment: str = "go2_flat") -> list[Path]:
    return sorted(p for p in (log_root / experiment).iterdir() if p.is_dir())


def snapshot(run_dir: Path) -> dict[str, bytes]:
    """The run's records as bytes (what a later session must not rewrite)."""
    return {name: (run_dir / name).read_bytes() for name in ("params/agent.yaml", "params/env.yaml", "summary.json")}


# --- a run is found by its exact name ---------------------------------------------------------------------------
def test_a_run_name_matches_exactly_never_as_a_suffix(tmp_path):
    experiment = tmp_path / "exp"
    for name in ("2026-01-01_00-00-00_x", "2026-01-01_00-00-05_lr_x", "2026-01-01_00-00-03-1_x", "2026-01-01_00-00-09"):
        (experiment / name).mkdir(parents=True)
        (experiment / name / "model_0.pt").write_bytes(b"")
    assert checkpoint.run_name_of("2026-01-01_00-00-05_lr_x") == "lr_x"
    assert checkpoint.run_name_of("2026-01-01_00-00-03-1_x") == "x" and checkpoint.run_name_of("notes") is None
    # the newest run named exactly x: the second one started in second 3, not lr_x (newer, a suffix match)
    assert Path(checkpoint.latest_run(str(experiment), "x")).name == "2026-01-01_00-00-03-1_x"
    assert Path(checkpoint.latest_run(str(experiment), "")).name == "2026-01-01_00-00-09"
    assert checkpoint.latest_run(str(experiment), "_x") is None


@pytest.mark.slow
def test_resume_auto_never_takes_over_another_run_whose_name_ends_alike(tmp_path):
    logs = tmp_path / "logs"
    train(logs, "--run_name", "lr_x", "agent.algorithm.learning_rate=3e-4")
    (other,) = run_dirs(logs)
    before = snapshot(other)
    train(logs, "--run_name", "x", "--resume", "auto")
    assert snapshot(other) == before  # lr_x's records untouched
    assert [checkpoint.run_name_of(p.name) for p in run_dirs(logs)] == ["lr_x", "x"]


# --- a run keeps the records of all its sessions ------------------------------------------------------------------
@pytest.mark.slow
def test_resumes_append_to_a_runs_records_and_never_erase_them(tmp_path):
    logs = tmp_path / "logs"
    train(logs, "--run_name", "r", "--resume", "auto")
    (run_dir,) = run_dirs(logs)
    first = snapshot(run_dir)
    # a launcher's restart after the final checkpoint: nothing to train, nothing rewritten
    res = train(logs, "--run_name", "r", "--resume", "auto", "agent.algorithm.learning_rate=3e-4")
    assert "nothing left to train" in res.stdout
    assert snapshot(run_dir) == first
    # a resume that trains: the run's params stay as started, the session's changes are recorded, summaries append
    train(logs, "--resume", str(run_dir), "--max_iterations", "2", "agent.algorithm.learning_rate=3e-4")
    assert (run_dir / "params" / "agent.yaml").read_bytes() == first["params/agent.yaml"]
    sessions = [json.loads(line) for line in (run_dir / "sessions.jsonl").read_text().splitlines()]
    assert [(s["start_iteration"], s["final_iteration"]) for s in sessions] == [(0, 2), (2, 2), (2, 4)]
    assert sessions[2]["changed"]["agent.algorithm.learning_rate"] == [0.001, 0.0003]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 4 and [s["session_iterations"] for s in summary["sessions"]] == [2, 2]
    assert json.loads(first["summary.json"])["wall_s"] == summary["sessions"][0]["wall_s"]


# --- one job per run ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_run_is_held_by_one_job_and_a_dead_holder_lets_a_restart_in(tmp_path):
    logs = tmp_path / "logs"
    job = [*TINY, "--log_root", str(logs), "--run_name", "j", "--resume", "auto"]
    holder = subprocess.Popen(
        train_cmd(*job, "--max_iterations", "100000"), env=clean_env(), stdout=subprocess.PIPE, text=True
    )
    read_until(holder, "[robolab] it 4/")  # it trains, and has checkpoints
    try:
        (run_dir,) = run_dirs(logs)
        # a second start of the same job, and one naming the run directory: refused, naming the holder
        for args in (job, [*TINY, "--log_root", str(logs), "--resume", str(run_dir)]):
            res = run(train_cmd(*args, "--max_iterations", "2"))
            assert res.returncode == 2 and "in use by another job" in res.stderr
            assert f"pid {holder.pid}" in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert run_dirs(logs) == [run_dir]
    finally:
        holder.kill()  # SIGKILL: no handler runs; the kernel drops the lock
        holder.wait()
    stray = run_dir / "model_99.pt.abcd1234.tmp"  # what a kill during a save leaves
    stray.write_bytes(b"partial")
    (run_dir / "params" / "env.yaml.zzzz9999.tmp").write_text("partial")
    # the restarted job takes the run over and clears what the killed save left
    restarted = subprocess.Popen(train_cmd(*job), env=clean_env(), stdout=subprocess.PIPE, text=True)
    seen = read_until(restarted, "[robolab] it ")
    restarted.send_signal(signal.SIGTERM)
    out, _ = restarted.communicate(timeout=60)
    assert restarted.returncode == 0 and "rank 0: resumed" in seen + out
    assert run_dirs(logs) == [run_dir] and not list(run_dir.rglob("*.tmp"))


def test_a_lock_held_in_this_process_refuses_a_second_holder(tmp_path):
    first = runs.RunLock(str(tmp_path / ".lock"), "run directory 'r'")
    with pytest.raises(runs.RunBusyError, match=f"pid {os.getpid()}"):
        runs.RunLock(str(tmp_path / ".lock"), "run directory 'r'")
    first.release()
    runs.RunLock(str(tmp_path / ".lock"), "run directory 'r'").release()  # free again


# --- names stay under the log root ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "flag, name, message",
    [
        ("--run_name", "../../../../x", "must be one directory name"),
        ("--run_name", "a/b", "must be one directory name"),
        ("--experiment_name", "..", "must be one directory name"),
        ("--experiment_name", "/abs/path", "must be one directory name"),
        ("--run_name", "x" * 240, "at most 232"),
        ("--experiment_name", "tab\there", "control characters"),
    ],
)
def test_a_name_that_would_leave_the_log_root_is_refused_before_anything_is_written(tmp_path, flag, name, message):
    logs = tmp_path / "logs"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = train_main([*QUICK, "--log_root", str(logs), flag, name])
    assert code == 2 and message in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []  # nothing written, not even the log root


def test_unicode_and_number_like_names_are_taken_as_written(tmp_path):
    logs = tmp_path / "logs"
    assert train_main([*QUICK, "--log_root", str(logs), "--run_name", "ünï 1e3", "--experiment_name", "éxp"]) == 0
    (run_dir,) = run_dirs(logs, "éxp")
    assert checkpoint.run_name_of(run_dir.name) == "ünï 1e3"


def test_name_checks_name_the_setting():
    with pytest.raises(ValueError, match="agent.run_name='a/b'"):
        files.check_dir_name("agent.run_name", "a/b")
    with pytest.raises(ValueError, match="agent.experiment_name='': must not be empty"):
        files.check_dir_name("agent.experiment_name", "")
    files.check_dir_name("agent.run_name", "", allow_empty=True)


# --- outputs go where the command says, whole, or nowhere ----------------------------------------------------------
def test_an_output_is_written_at_exactly_its_path_or_refused(tmp_path):
    quiet = contextlib.redirect_stdout(io.StringIO())
    err = io.StringIO()
    with quiet, contextlib.redirect_stderr(err):
        assert motion_main(["generate", "--output", str(tmp_path / "clip")]) == 0  # no ".npz" added
        assert motion_main(["generate", "--output", "/dev/full"]) == 2
        assert motion_main(["generate", "--output", str(tmp_path)]) == 2
    assert os.listdir(tmp_path) == ["clip"] and zipfile.is_zipfile(tmp_path / "clip")
    assert "/dev/full' is not a regular file" in err.getvalue() and "is a directory" in err.getvalue()
    assert Path("/dev/full").is_char_device()  # the device is still a device


def test_an_archive_that_would_inflate_beyond_the_limit_is_refused_from_its_headers(tmp_path):
    bomb = tmp_path / "bomb.npz"
    header = {"descr": "<f8", "fortran_order": False, "shape": (500_000_000,)}  # 4 GB declared
    with (
        zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("joint_pos.npy", "w", force_zip64=True) as member,
    ):
        np.lib.format.write_array_header_1_0(member, header)
        member.write(bytes(2**20))
    assert bomb.stat().st_size < 100_000
    start = time.time()
    with pytest.raises(MotionFormatError, match="would take 3815 MiB, over the 256 MiB"):
        read_arrays(str(bomb))
    assert time.time() - start < 1.0  # nothing was inflated


# --- a run directory's files do not choose code to import -----------------------------------------------------------
MARKER_MODULE = "robolab_test_marker_{}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "file, key, value",
    [
        ("agent.yaml", "runner_class_name", "{module}:Runner"),
        ("agent.yaml", "algorithm.class_name", "{module}.PPO"),
        ("env.yaml", "robot.builder", "{module}:build"),
        ("env.yaml", "rewards.track_lin_vel_xy.func", "{module}:reward"),
        ("agent.yaml", "runner_class_name", "builtins:print"),
    ],
)
def test_play_refuses_code_named_by_a_run_directory_and_imports_nothing(tmp_path, monkeypatch, file, key, value):
    import yaml

    logs = tmp_path / "logs"
    train(logs)
    (run_dir,) = run_dirs(logs)
    # a module that leaves a mark when imported, on the import path
    module = MARKER_MODULE.format(abs(hash((file, key))) % 10**6)
    (tmp_path / f"{module}.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = run_dir / "params" / file
    data = yaml.safe_load(path.read_text())
    *parents, leaf = key.split(".")
    node = data
    for part in parents:
        node = node[part]
    node[leaf] = value.format(module=module)
    path.write_text(yaml.safe_dump(data))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = play_main(["--log_root", str(logs), "--num_envs", "2", "--steps", "2", "--no_export"])
    assert code == 2 and "names code outside robolab" in err.getvalue(), err.getvalue()[-2000:]
    assert f"{'env' if file == 'env.yaml' else 'agent'}.{key}=" in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1
    assert not (tmp_path / "imported").exists() and module not in sys.modules


# --- a stop request ends even a long update within seconds -----------------------------------------------------------
@pytest.mark.slow
def test_sigterm_during_a_long_update_ends_the_run_within_seconds_with_the_last_complete_iteration(tmp_path):
    logs = tmp_path / "logs"
    assert run(train_cmd(*TINY, "--log_root", str(logs), "--max_iterations", "1")).returncode == 0  # model_0
    # resumed with an update of 64000 minibatch steps (a minute or more) from iteration 1 on
    args = [*TINY, "--log_root", str(logs), "--max_iterations", "100", "--resume", "latest", "agent.save_interval=100"]
    job = subprocess.Popen(
        train_cmd(*args, "agent.algorithm.num_learning_epochs=1000", "agent.algorithm.num_mini_batches=64"),
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    read_until(job, "[robolab] resuming at iteration 1")
    time.sleep(2.0)  # iteration 1's rollout (16 envs x 8 steps) is done, its update under way
    stopped = time.time()
    job.send_signal(signal.SIGTERM)
    out, _ = job.communicate(timeout=60)
    assert job.returncode == 0 and time.time() - stopped < 10, out[-3000:]
    assert "iteration 1 abandoned" in out
    (run_dir,) = run_dirs(logs)
    assert sorted(p.name for p in run_dir.glob("model_*.pt")) == ["model_0.pt"]  # saved at iteration 0, kept
    assert checkpoint.load(str(run_dir / "model_0.pt"))["iter"] == 0
    assert json.loads((run_dir / "summary.json").read_text())["iterations"] == 1
