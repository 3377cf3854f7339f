"""Hydra multirun sweeps in which every job trains in a fresh process.

``scripts/train.py -m agent.algorithm.learning_rate=1e-3,3e-4 seed=1,2`` hands the sweep to Hydra (its sweeper
expands the grid, its launcher runs the jobs: sequentially here, or on Slurm with ``hydra/launcher=slurm``).
A job does not train inside the launcher's process: it starts ``scripts/train.py`` as a child process, or
``torchrun`` when ``--distributed`` is given, so no simulator, CUDA or process-group state can leak from one job
into the next (what breaks sweeps with an in-process simulator). A failing job is recorded, not raised, so the
others still run; when the sweep ends, ``SweepSummary`` writes ``summary.csv`` and ``summary.md`` in the sweep
directory with every job's overrides, exit status and ``summary.json`` metrics.

On a node with several GPUs the jobs run side by side (Hydra's joblib launcher, ``--jobs_per_node`` of them,
default: as many as the GPUs hold), each on GPUs of its own: a job takes a free slot (a lock file in the sweep
directory) and its child sees only that slot's GPUs through ``CUDA_VISIBLE_DEVICES``. On a CPU machine they run
one after another unless ``--jobs_per_node`` says otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from robolab import checkpoint, console
from robolab.config import config_source, hydra_overrides, split_preset_tokens, task_config, user_overrides
from robolab.rl_cfg import register_schemas

RESULT_FILE = "job_result.json"
METRICS = (
    "world_size",
    "iterations",
    "total_env_steps",
    "wall_s",
    "env_steps_per_s",
    "mean_reward",
    "mean_episode_length",
    "lin_vel_tracking_error",
    "fall_rate",
)
TRAIN_MODULE = "robolab.cli.train"  # run as a module: an installed wheel has no scripts/ directory


FORWARDED = (
    "num_envs",
    "max_iterations",
    "device",
    "run_name",
    "experiment_name",
    "logger",
    "log_project_name",
    "seed",
    "video_length",
    "video_interval",
    "check_replication_every",
    "teacher_checkpoint",
    "init_policy",
)
"""``train.py`` flags with a value that every sweep job gets as given."""
FORWARDED_SWITCHES = ("headless", "video", "export_io_descriptors", "enable_cameras", "verbose")
NOT_IN_SWEEPS = ("resume", "load_run", "checkpoint")
"""Flags a sweep refuses: each point trains a new run under its own log root (resume one with its run directory)."""
SWEEP_ONLY = ("nproc_per_node", "jobs_per_node", "sweep_dir")
"""Flags that only mean something with ``-m``."""
BY_THE_SWEEP = ("task", "agent", "log_root", "distributed", "multirun", "list_tasks", "isaaclab_launcher_flags")
"""Flags the sweep itself handles (``--log_root`` becomes each job's own log root)."""


def check_sweep_flags(args: argparse.Namespace) -> None:
    """A sweep flag without ``-m``, or ``-m`` with a flag a sweep cannot honour, is one line (not a silent drop)."""
    if args.multirun:
        for name in NOT_IN_SWEEPS:
            if getattr(args, name) is not None:
                raise ValueError(
                    f"--{name}: a sweep trains a new run per point, each under its own log root; resume a point's run "
                    "on its own (python scripts/train.py --resume <its run directory>)"
                )
    else:
        for name in SWEEP_ONLY:
            if getattr(args, name) is not None:
                raise ValueError(f"--{name}: a sweep setting; add -m to sweep, or leave it out")


def child_command(args: argparse.Namespace, job_overrides: list[str], log_root: str) -> list[str]:
    """The command that trains one sweep point: the sweep's own flags, the point's overrides, its own log root."""
    flags = ["--task", args.task, "--agent", args.agent, "--log_root", log_root]
    for name in FORWARDED:
        value = getattr(args, name, None)
        if value is not None:
            flags += [f"--{name}", str(value)]
    flags += [f"--{name}" for name in FORWARDED_SWITCHES if getattr(args, name, False)]
    if args.distributed:
        nproc = gpus_per_job(args)
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
        return [*launcher, "-m", TRAIN_MODULE, "--distributed", *flags, *job_overrides]
    return [sys.executable, "-m", TRAIN_MODULE, *flags, *job_overrides]


def run_job(args: argparse.Namespace, cfg: DictConfig) -> dict[str, Any]:
    """One sweep point, in the job directory Hydra made for it. Never raises: failures are results."""
    hc = HydraConfig.get()
    job_dir = Path(hc.runtime.output_dir)
    # The child re-applies the Hydra form itself; the table shows what the user typed.
    overrides = user_overrides([o for o in hc.overrides.task if not o.startswith("task=")])
    cmd = child_command(args, overrides + getattr(args, "isaaclab_presets", []), str(job_dir / "logs"))
    sweep_dir = Path(hc.sweep.dir)
    with job_slot(sweep_dir, jobs_per_node(args)) as slot, open(job_dir / "train.log", "w") as log:
        env, devices = child_env(slot, gpus_per_job(args), visible_gpus())
        print(f"[robolab] sweep job {hc.job.num} ({' '.join(overrides)}): started; log {job_dir / 'train.log'}")
        started = time.time()
        child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        # side by side, several bars would overwrite each other: a bar only for jobs run one at a time
        returncode = follow_iterations(child, job_dir / "train.log", f"job {hc.job.num}", jobs_per_node(args) == 1)
        ended = time.time()
    run_dir = checkpoint.latest_run(str(job_dir / "logs" / (args.experiment_name or cfg.agent.experiment_name)))
    result: dict[str, Any] = {
        "job": hc.job.num,
        "overrides": " ".join(overrides),
        "status": "ok" if returncode == 0 else "failed",
        "returncode": returncode,
        "run_dir": run_dir,
        "slot": slot,
        "cuda_visible_devices": devices,
        "started": started,
        "ended": ended,
    }
    summary_path = Path(run_dir or "", "summary.json")
    if run_dir and summary_path.is_file():
        summary = json.loads(summary_path.read_text())
        result.update({k: summary.get(k) for k in METRICS})
    if returncode != 0:
        tail = (job_dir / "train.log").read_text().strip().splitlines()[-1:] or [""]
        result["error"] = tail[0][:300]
    (job_dir / RESULT_FILE).write_text(json.dumps(result, indent=2) + "\n")
    print(f"[robolab] sweep job {result['job']} ({result['overrides']}): {result['status']}")
    return result


def follow_iterations(child: subprocess.Popen, log: Path, desc: str, show: bool, poll_s: float = 0.5) -> int:
    """Wait for the job ``child``; meanwhile a progress bar of its iterations, read from its quiet iteration lines
    in ``log`` (``robolab.console.ITERATION_LINE``). Returns its exit code."""
    with console.progress(None, desc, unit="it", enabled=show) as bar, open(log, errors="replace") as lines:
        while True:
            returncode = child.poll()
            found = console.ITERATION_LINE.findall(lines.read())
            if found:
                done, total = map(int, found[-1])
                if bar.total != total:
                    bar.total = total
                    bar.refresh()
                bar.update(done - bar.n)
            if returncode is not None:
                return returncode
            time.sleep(poll_s)


class SweepSummary(Callback):
    """Writes ``summary.csv`` and ``summary.md`` in the sweep directory once every job has ended."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        write_summary(Path(config.hydra.sweep.dir))


def write_summary(sweep_dir: Path) -> list[dict]:
    """Gather the jobs' results of a sweep into ``summary.csv`` and ``summary.md``; returns the rows."""
    rows = sorted((json.loads(p.read_text()) for p in sweep_dir.glob(f"*/{RESULT_FILE}")), key=lambda r: int(r["job"]))
    columns = ["job", "overrides", "status", "returncode", *METRICS, "run_dir", "error"]
    with open(sweep_dir / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    shown = [
        "job",
        "overrides",
        "status",
        "world_size",
        "iterations",
        "lin_vel_tracking_error",
        "fall_rate",
        "mean_reward",
    ]
    lines = ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c)) for c in shown) + " |")
    (sweep_dir / "summary.md").write_text("\n".join(lines) + "\n")
    print(f"[robolab] sweep summary: {sweep_dir / 'summary.md'} ({len(rows)} jobs)")
    return rows


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


# --- jobs side by side, one set of GPUs each ----------------------------------------------------------------
def visible_gpus() -> list[str]:
    """This node's GPUs as ``CUDA_VISIBLE_DEVICES`` names them (the physical ids when it is unset)."""
    count = torch.cuda.device_count()
    given = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return given[:count] if given else [str(i) for i in range(count)]


def gpus_per_job(args: argparse.Namespace) -> int:
    """Processes of one job: ``--nproc_per_node`` with ``--distributed`` (default: every GPU), else 1."""
    if not args.distributed:
        return 1
    return args.nproc_per_node or max(1, torch.cuda.device_count())


def jobs_per_node(args: argparse.Namespace) -> int:
    """``--jobs_per_node``, else as many jobs as the GPUs hold (1 on a CPU machine, or on the CPU device)."""
    if args.jobs_per_node is not None:
        if args.jobs_per_node <= 0:
            raise ValueError(f"--jobs_per_node={args.jobs_per_node}: must be a positive integer")
        return args.jobs_per_node
    if str(args.device or "").startswith("cpu"):
        return 1
    return max(1, len(visible_gpus()) // gpus_per_job(args))


@contextlib.contextmanager
def job_slot(sweep_dir: Path, slots: int):
    """A slot number in ``range(slots)`` that no other running job of the sweep holds (an flock per slot); the
    launcher runs at most ``slots`` jobs at once, so one is always free soon."""
    lock_dir = sweep_dir / ".slots"
    lock_dir.mkdir(parents=True, exist_ok=True)
    while True:
        for slot in range(slots):
            with open(lock_dir / f"{slot}.lock", "w") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                try:
                    yield slot
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
                return
        time.sleep(0.2)


def child_env(slot: int, gpus_per_job: int, gpus: list[str]) -> tuple[dict[str, str], str | None]:
    """The child's environment: the GPUs of ``slot`` only, when the node has GPUs; (env, CUDA_VISIBLE_DEVICES)."""
    env = dict(os.environ)
    if not gpus:
        return env, None
    mine = gpus[slot * gpus_per_job : (slot + 1) * gpus_per_job]
    if len(mine) < gpus_per_job:
        raise ValueError(
            f"sweep slot {slot} needs {gpus_per_job} GPUs but the node has {len(gpus)}: lower --jobs_per_node"
        )
    env["CUDA_VISIBLE_DEVICES"] = ",".join(mine)
    return env, env["CUDA_VISIBLE_DEVICES"]


def launcher_overrides(args: argparse.Namespace, overrides: list[str]) -> list[str]:
    """Side-by-side jobs through Hydra's joblib launcher, unless the user picked a launcher (Slurm, ...)."""
    jobs = jobs_per_node(args)
    if jobs == 1 or any(o.startswith(("hydra/launcher=", "hydra.launcher.")) for o in overrides):
        return []
    return ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={jobs}"]


def run_sweep(args: argparse.Namespace, overrides: list[str]) -> None:
    """Hand the sweep to Hydra's multirun (sweeper + launcher) with ``run_job`` as the job function."""
    register_schemas()
    # Isaac Lab's preset tokens are not Hydra's: every job gets them as given (they are not swept).
    args.isaaclab_presets, overrides = split_preset_tokens(overrides)
    hydra_task, task_overrides = task_config(args.task, args.agent, args.isaaclab_presets, overrides)
    launcher = launcher_overrides(args, overrides)
    sys.argv = [
        sys.argv[0],
        "--multirun",
        f"task={hydra_task}",
        *hydra_overrides(task_overrides + overrides),
        *launcher,
    ]
    if args.sweep_dir:
        sys.argv.append(f"hydra.sweep.dir={args.sweep_dir}")
    if launcher:
        print(f"[robolab] sweep: {jobs_per_node(args)} jobs side by side ({gpus_per_job(args)} GPU(s) each)")
    main = hydra.main(config_path=config_source(), config_name="train", version_base="1.3")(
        lambda cfg: run_job(args, cfg)
    )
    main()
