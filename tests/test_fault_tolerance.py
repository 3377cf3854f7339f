"""Surviving a lost rank: torchrun restarts the group and ``--resume auto`` continues the same run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TINY, TRAIN, clean_env, read_until
from robolab import checkpoint

FINAL = 12


def worker_pids(parent: int) -> dict[int, int]:
    """Global rank -> pid of the torchrun workers below ``parent``."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        for item in environ:
            if item.startswith(b"RANK="):
                found[int(item[5:])] = int(pid)
    return found


@pytest.mark.slow
def test_killed_worker_is_restarted_and_training_resumes_in_the_same_run(tmp_path):
    log_root = tmp_path / "logs"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "--max-restarts=1",
        TRAIN,
        "--distributed",
        "--device",
        "cpu",
        *TINY,
        "--max_iterations",
        str(FINAL),
        "--log_root",
        str(log_root),
        "--run_name",
        "ft",
        "--resume",
        "auto",
    ]
    job = subprocess.Popen(cmd, env=clean_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 180
    run_dir = None
    while time.time() < deadline:  # wait for the first checkpoints
        runs = list((log_root / "go2_flat").glob("*_ft")) if (log_root / "go2_flat").exists() else []
        if (
            runs
            and checkpoint.latest_checkpoint(str(runs[0]))
            and checkpoint.checkpoint_iteration(checkpoint.latest_checkpoint(str(runs[0]))) >= 2
        ):
            run_dir = runs[0]
            break
        time.sleep(0.2)
    assert run_dir is not None, "no checkpoint appeared"
    victim = worker_pids(job.pid).get(1)
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    killed_after = checkpoint.checkpoint_iteration(checkpoint.latest_checkpoint(str(run_dir)))
    output, _ = job.communicate(timeout=300)
    assert job.returncode == 0, output[-4000:]

    assert [p.name for p in (log_root / "go2_flat").iterdir() if p.is_dir()] == [run_dir.name]  # no second run
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == FINAL and summary["world_size"] == 2
    console = (run_dir / "console.log").read_text()
    resumed = [line for line in console.splitlines() if "rank 0: resumed" in line]
    assert len(resumed) == 1
    resumed_from = checkpoint.checkpoint_iteration(resumed[0].split("resumed ")[1].split(" at ")[0])
    assert resumed_from >= killed_after  # the newest complete checkpoint when the group restarted
    assert resumed[0].endswith(f"at iteration {resumed_from + 1}")
    assert console.count("run directory: ") == 2  # both attempts logged to the same file
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 2  # TensorBoard continued in the same directory
    for model in run_dir.glob("model_*.pt"):  # every checkpoint on disk is complete
        assert checkpoint.load(str(model))["iter"] == checkpoint.checkpoint_iteration(str(model))
    assert (run_dir / f"model_{FINAL - 1}.pt").exists()


CHAOS_TRIALS = int(os.environ.get("ROBOLAB_CHAOS_TRIALS", "2"))  # README: ROBOLAB_CHAOS_TRIALS=10 for the full run
CHAOS_FINAL = 30


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(CHAOS_TRIALS))
def test_a_rank_killed_at_a_random_time_never_loses_the_run(tmp_path, trial):
    """SIGKILL to a random rank at a random time (start-up, training, a checkpoint write, the end): the job still
    ends at its planned iteration, with every checkpoint loadable and one summary."""
    rng = random.Random(4242 + trial)
    victim, delay = rng.randrange(2), rng.uniform(0.5, 7.0)  # the job takes about 8 s undisturbed
    log_root = tmp_path / "logs"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--max-restarts=3",
        TRAIN, "--distributed", "--device", "cpu", *TINY, "--max_iterations", str(CHAOS_FINAL),
        "--log_root", str(log_root), "--run_name", "chaos", "--resume", "auto",
    ]  # fmt: skip
    job = subprocess.Popen(cmd, env=clean_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline, pid = time.time() + delay, None
    while job.poll() is None:  # kill the victim at the first moment after the delay that it exists
        pid = worker_pids(job.pid).get(victim) if time.time() >= deadline else None
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    output, _ = job.communicate(timeout=300)
    assert job.returncode == 0, f"trial {trial} (rank {victim} killed after {delay:.1f} s): {output[-4000:]}"
    summaries = list(log_root.rglob("summary.json"))
    assert len(summaries) == 1, summaries
    summary = json.loads(summaries[0].read_text())
    assert summary["iterations"] == CHAOS_FINAL and summary["world_size"] == 2
    models = list(log_root.rglob("model_*.pt"))
    assert models and (summaries[0].parent / f"model_{CHAOS_FINAL - 1}.pt").exists()
    for model in models:
        assert checkpoint.load(str(model))["iter"] == checkpoint.checkpoint_iteration(str(model))
    print(f"trial {trial}: rank {victim} {'killed' if pid else 'not killed (the job had ended)'} after {delay:.1f} s")


@pytest.mark.slow
def test_workers_whose_launcher_was_killed_stop_with_their_checkpoint(tmp_path):
    """kill -9 of torchrun: its workers get SIGTERM (parent-death signal) and stop after the iteration under way,
    saved, well within distributed.timeout_s; they do not train on unsupervised."""
    log_root = tmp_path / "logs"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", TRAIN, "--distributed",
        "--device", "cpu", *TINY, "--max_iterations", "100000", "--log_root", str(log_root), "agent.save_interval=1000",
        "distributed.timeout_s=30",
    ]  # fmt: skip
    launcher = subprocess.Popen(cmd, env=clean_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    read_until(launcher, "[robolab] it 6/")
    workers = worker_pids(launcher.pid)
    assert len(workers) == 2
    launcher.kill()
    killed = time.time()
    while any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in workers.values()):
        assert time.time() - killed < 30, "workers outlived their launcher"
        time.sleep(0.2)
    launcher.wait()
    (run_dir,) = [p for p in (log_root / "go2_flat").iterdir() if p.is_dir()]
    models = sorted(run_dir.glob("model_*.pt"), key=lambda p: checkpoint.checkpoint_iteration(str(p)))
    assert len(models) >= 2  # iteration 0, and the one they stopped after
    assert checkpoint.load(str(models[-1]))["iter"] >= 5
    assert json.loads((run_dir / "summary.json").read_text())["stopped_early"] is True


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (FileNotFoundError, IndexError):
        return "zombie"


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(CHAOS_TRIALS))
def test_a_run_killed_at_a_random_moment_resumes_with_its_records_intact(tmp_path, trial):
    """kill -9 of a single-process run at a random moment (start-up, training, a save): the next start of the job
    resumes (or starts, if nothing was saved), leaves no temporary file, and keeps the first session's params."""
    rng = random.Random(777 + trial)
    log_root = tmp_path / "logs"
    job = [TRAIN, *TINY, "--max_iterations", "40", "--log_root", str(log_root), "--run_name", "k", "--resume", "auto"]
    first = subprocess.Popen([sys.executable, *job], env=clean_env(), stdout=subprocess.PIPE, text=True)
    if rng.random() < 0.75:  # most kills once training is under way (saves every iteration), the others at start-up
        while "[robolab] it " not in (first.stdout.readline() or "[robolab] it "):
            pass
    time.sleep(rng.uniform(0.1, 3.0))
    first.kill()
    first.communicate()
    experiment = log_root / "go2_flat"
    runs_before = [p for p in experiment.iterdir() if p.is_dir()] if experiment.exists() else []
    params_before = {p: (p / "params" / "agent.yaml").read_bytes() for p in runs_before if (p / "params").exists()}
    res = subprocess.run([sys.executable, *job], env=clean_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    runs_after = [p for p in (log_root / "go2_flat").iterdir() if p.is_dir()]
    resumed = [p for p in runs_before if checkpoint.latest_checkpoint(str(p))]
    assert len(runs_after) == (len(runs_before) if resumed else len(runs_before) + 1)
    run_dir = resumed[0] if resumed else next(p for p in runs_after if p not in runs_before)
    assert not list(log_root.rglob("*.tmp"))
    for path, before in params_before.items():
        assert (path / "params" / "agent.yaml").read_bytes() == before  # the first session's record
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 40
    for model in run_dir.glob("model_*.pt"):
        assert checkpoint.load(str(model))["iter"] == checkpoint.checkpoint_iteration(str(model))
    print(f"trial {trial}: {'resumed' if resumed else 'started anew'}; {len(runs_after)} run(s)")
