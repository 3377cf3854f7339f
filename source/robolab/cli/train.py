"""``scripts/train.py``: one entry point for a laptop CPU, every GPU of a node, and many nodes.

Known flags are parsed with argparse; everything else is handed to Hydra as overrides
(``agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time=0.5``). How the run is assembled is in
``robolab.session``; this module parses and prints.
"""

from __future__ import annotations

import argparse
import sys

from robolab import tasks
from robolab.cli import one_line_errors
from robolab.session import DEFAULT_LOG_ROOT, DEFAULT_TASK, TrainOptions, prepare_training, run_training


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Train a locomotion policy with RSL-RL. Unknown arguments are Hydra overrides.",
        epilog="example: python scripts/train.py --task RoboLab-Velocity-Flat-Go2-v0 "
        "agent.algorithm.learning_rate=3e-4",
    )
    p.add_argument("--task", default=DEFAULT_TASK, help="task id (see --list_tasks)")
    p.add_argument("--list_tasks", action="store_true", help="print the registered task ids and exit")
    p.add_argument("--num_envs", type=int, default=None, help="environments per process")
    p.add_argument("--max_iterations", type=int, default=None, help="final training iteration count")
    p.add_argument("--seed", type=int, default=None, help="base seed; each process adds its global rank")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--distributed", action="store_true", help="one process per GPU (or CPU rank) from the launcher")
    p.add_argument(
        "--headless", action="store_true", help="accepted for Isaac Lab parity; the embedded sim never opens a window"
    )
    p.add_argument("--log_root", default=DEFAULT_LOG_ROOT, help="root of all experiment directories")
    p.add_argument("--run_name", default=None, help="suffix of the run directory name")
    p.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        default=None,
        metavar="auto|latest|RUN_DIR|CHECKPOINT",
        help="continue the newest run of the experiment (latest), the newest if any else start fresh (auto), "
        "or a given run directory or checkpoint file",
    )
    p.add_argument("--check_replication_every", type=int, default=None, help="compare all ranks every N iterations")
    p.add_argument(
        "--teacher_checkpoint",
        default=None,
        help="distillation: the PPO checkpoint of the teacher (default: newest of agent.teacher_experiment)",
    )
    sweep = p.add_argument_group("sweeps (Hydra multirun: every job trains in its own process)")
    sweep.add_argument("-m", "--multirun", action="store_true", help="sweep over comma-separated override values")
    sweep.add_argument(
        "--nproc_per_node",
        type=int,
        default=None,
        help="processes per sweep job with --distributed (default: visible GPUs, else 1)",
    )
    sweep.add_argument("--sweep_dir", default=None, help="sweep directory (default: multirun/<timestamp>)")
    return p


def train(argv: list[str] | None = None) -> dict | None:
    args, hydra_overrides = build_parser().parse_known_args(argv)
    if args.list_tasks:
        for task_id in tasks.list_tasks():
            print(f"{task_id:40s} {tasks.task_kwargs(task_id)['description']}")
        return None
    if args.multirun:
        from robolab.sweep import run_sweep

        run_sweep(args, hydra_overrides)
        return None
    session = prepare_training(TrainOptions.from_namespace(args), hydra_overrides)
    with session.closer:
        return run_training(session)


def main(argv: list[str] | None = None) -> int:
    return one_line_errors(lambda: train(argv))


if __name__ == "__main__":
    sys.exit(main())
