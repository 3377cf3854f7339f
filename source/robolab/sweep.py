"""Hydra multirun sweeps in which every job trains in a fresh process.

``scripts/train.py -m agent.algorithm.learning_rate=1e-3,3e-4 seed=1,2`` hands the sweep to Hydra (its sweeper
expands the grid, its launcher runs the jobs: sequentially here, or on Slurm with ``hydra/launcher=slurm``).
A job does not train inside the launcher's process: it starts ``scripts/train.py`` as a child process, or
``torchrun`` when ``--distributed`` is given, so no simulator, CUDA or process-group state can leak from one job
into the next (what breaks sweeps with an in-process simulator). A failing job is recorded, not raised, so the
others still run; when the sweep ends, ``SweepSummary`` writes ``summary.csv`` and ``summary.md`` in the sweep
directory with every job's overrides, exit status and ``summary.json`` metrics.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from robolab import checkpoint, tasks
from robolab.config import config_source, hydra_overrides, user_overrides
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


def child_command(args: argparse.Namespace, job_overrides: list[str], log_root: str) -> list[str]:
    """The command that trains one sweep point: the sweep's own flags, the point's overrides, its own log root."""
    flags = ["--task", args.task, "--log_root", log_root]
    for name in ("num_envs", "max_iterations", "device", "run_name", "check_replication_every"):
        value = getattr(args, name)
        if value is not None:
            flags += [f"--{name}", str(value)]
    if args.headless:
        flags.append("--headless")
    if args.distributed:
        nproc = args.nproc_per_node or max(1, torch.cuda.device_count())
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
        return [*launcher, "-m", TRAIN_MODULE, "--distributed", *flags, *job_overrides]
    return [sys.executable, "-m", TRAIN_MODULE, *flags, *job_overrides]


def run_job(args: argparse.Namespace, cfg: DictConfig) -> dict[str, Any]:
    """One sweep point, in the job directory Hydra made for it. Never raises: failures are results."""
    hc = HydraConfig.get()
    job_dir = Path(hc.runtime.output_dir)
    # The child re-applies the Hydra form itself; the table shows what the user typed.
    overrides = user_overrides([o for o in hc.overrides.task if not o.startswith("task=")])
    cmd = child_command(args, overrides, str(job_dir / "logs"))
    with open(job_dir / "train.log", "w") as log:
        returncode = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    run_dir = checkpoint.latest_run(str(job_dir / "logs" / cfg.agent.experiment_name))
    result: dict[str, Any] = {
        "job": hc.job.num,
        "overrides": " ".join(overrides),
        "status": "ok" if returncode == 0 else "failed",
        "returncode": returncode,
        "run_dir": run_dir,
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


class SweepSummary(Callback):
    """Writes ``summary.csv`` and ``summary.md`` in the sweep directory once every job has ended."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        write_summary(Path(config.hydra.sweep.dir))


def write_summary(sweep_dir: Path) -> list[dict]:
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


def run_sweep(args: argparse.Namespace, overrides: list[str]) -> None:
    """Hand the sweep to Hydra's multirun (sweeper + launcher) with ``run_job`` as the job function."""
    hydra_task = tasks.hydra_task_name(args.task)
    register_schemas()
    sys.argv = [sys.argv[0], "--multirun", f"task={hydra_task}", *hydra_overrides(overrides)]
    if args.sweep_dir:
        sys.argv.append(f"hydra.sweep.dir={args.sweep_dir}")
    main = hydra.main(config_path=config_source(), config_name="train", version_base="1.3")(
        lambda cfg: run_job(args, cfg)
    )
    main()
