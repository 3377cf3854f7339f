"""``scripts/train.py``: one entry point for a laptop CPU, every GPU of a node, and many nodes.

Known flags are parsed with argparse; everything else is handed to Hydra as overrides
(``agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time.weight=0.5``). How the run is assembled is in
``robolab.session``; this module parses and prints.
"""

from __future__ import annotations

import argparse
import sys

from robolab import tasks
from robolab.cli import (
    add_window_flags,
    bare_resume,
    isaaclab_launcher_args,
    one_line_errors,
    parse,
    parser_with_isaaclab_launch_flags,
    positive_int,
)
from robolab.launch import DEFAULT_AGENT, DEFAULT_LOG_ROOT, DEFAULT_TASK, LOGGERS, TrainOptions
from robolab.session import prepare_training, run_training


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``scripts/train.py``: Isaac Lab's rsl_rl flags, robolab's, and the sweep flags."""
    p = parser_with_isaaclab_launch_flags(
        description="Train a locomotion policy with RSL-RL. Isaac Lab's rsl_rl flags keep their meaning; "
        "arguments without -- are Hydra overrides "
        "(agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time.weight=0.5), "
        "except Isaac Lab's preset tokens (physics=NAME, presets=A,B, renderer=NAME), which select Isaac Lab presets.",
        epilog="example: python scripts/train.py --task RoboLab-Velocity-Flat-Go2-v0 --max_iterations 300 "
        "agent.algorithm.learning_rate=3e-4",
    )
    p.add_argument("--task", default=DEFAULT_TASK, help="task id (see --list_tasks)")
    p.add_argument("--list_tasks", action="store_true", help="print the registered task ids and exit")
    p.add_argument(
        "--agent", default=DEFAULT_AGENT, help="the task's agent config entry point (--list_tasks shows each task's)"
    )
    p.add_argument("--num_envs", type=int, default=None, help="environments per process (default: the task's)")
    p.add_argument(
        "--max_iterations",
        type=int,
        default=None,
        help="a new run: iterations to train; --resume (or --load_run/--checkpoint): that many more, as in Isaac Lab; "
        "a restarted job (--resume auto, torchrun or Slurm restart) keeps its planned final iteration "
        "(default: the agent config's max_iterations)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="base seed, each process adds its global rank; -1 draws one (logged) (default: the agent config's seed)",
    )
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--distributed", action="store_true", help="one process per GPU (or CPU rank) from the launcher")
    add_window_flags(p)
    logs = p.add_argument_group("runs and logging (Isaac Lab's rsl_rl flags)")
    logs.add_argument("--log_root", default=DEFAULT_LOG_ROOT, help="root of all experiment directories")
    logs.add_argument("--experiment_name", default=None, help="experiment directory name (default: the task's)")
    logs.add_argument("--run_name", default=None, help="suffix of the run directory name")
    logs.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        default=None,
        metavar="auto|latest|RUN_DIR|CHECKPOINT",
        help="continue a run in its own directory: the newest of the experiment (bare --resume, latest), the newest "
        "if any else a new run (auto, for jobs a launcher may restart), or a given run directory or checkpoint file",
    )
    logs.add_argument("--load_run", default=None, help="with --resume: regex over run directory names (newest match)")
    logs.add_argument(
        "--checkpoint", default=None, help="with --resume: regex over checkpoint names (highest iteration), or a file"
    )
    logs.add_argument("--logger", default=None, choices=LOGGERS, help="tensorboard (default), wandb or neptune")
    logs.add_argument("--log_project_name", default=None, help="wandb/neptune project (default: the experiment name)")
    logs.add_argument("--video", action="store_true", help="rank 0 records videos to <run>/videos/train/")
    logs.add_argument("--video_length", type=int, default=200, help="env steps per recorded clip")
    logs.add_argument("--video_interval", type=int, default=2000, help="env steps between clip starts")
    logs.add_argument(
        "--export_io_descriptors", action="store_true", help="write the policy's inputs and outputs to params/"
    )
    robolab = p.add_argument_group("robolab")
    robolab.add_argument(
        "--check_replication_every", type=int, default=None, help="compare all ranks every N iterations"
    )
    robolab.add_argument(
        "--teacher_checkpoint",
        default=None,
        help="distillation: the PPO checkpoint of the teacher (default: newest of agent.teacher_experiment)",
    )
    robolab.add_argument(
        "--init_policy",
        default=None,
        help="PPO: start the policy from this checkpoint's student or actor, the critic fresh "
        "(default: newest of agent.init_policy_experiment, else from scratch)",
    )
    sweep = p.add_argument_group("sweeps (Hydra multirun: every job trains in its own process)")
    sweep.add_argument("-m", "--multirun", action="store_true", help="sweep over comma-separated override values")
    sweep.add_argument(
        "--nproc_per_node",
        type=positive_int,
        default=None,
        help="processes per sweep job with --distributed (default: visible GPUs, else 1)",
    )
    sweep.add_argument(
        "--jobs_per_node",
        type=positive_int,
        default=None,
        help="sweep jobs run side by side, each on its own GPUs (default: visible GPUs / GPUs per job; 1 on a CPU)",
    )
    sweep.add_argument("--sweep_dir", default=None, help="sweep directory (default: multirun/<timestamp>)")
    return p


def parse_flags(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The flags and the Hydra overrides; a bare ``--resume`` before an override means ``latest``."""
    return parse(build_parser(), bare_resume(sys.argv[1:] if argv is None else argv))


def print_task_list() -> None:
    """One line a task: its id for --task, what it trains, and any other agent configs --agent takes."""
    print(f"{'task (--task)':42s} what it trains (other --agent configs in brackets)")
    for task_id in tasks.list_tasks():
        agents = ", ".join(a for a in tasks.agent_entry_points(task_id) if a != DEFAULT_AGENT)
        more = f" (--agent {agents})" if agents else ""
        print(f"{task_id:42s} {tasks.description(task_id)}{more}")
    if not tasks.isaaclab_installed():
        note = "Isaac Lab is not installed (README, 'Isaac Lab')"
        print(f"Isaac Lab's tasks (Isaac-*, RoboLab-Isaac-*) are not listed: {note}")


def train(argv: list[str] | None = None) -> dict | None:
    """Train (or list the tasks, or run a sweep); returns the run's summary on rank 0."""
    args, hydra_overrides = parse_flags(argv)
    if args.list_tasks:
        print_task_list()
        return None
    args.isaaclab_launcher = isaaclab_launcher_args(args)
    from robolab.sweep import check_sweep_flags

    check_sweep_flags(args)
    if args.multirun:
        from robolab.sweep import run_sweep

        run_sweep(args, hydra_overrides)
        return None
    session = prepare_training(TrainOptions.from_namespace(args), hydra_overrides)
    with session.closer:
        return run_training(session)


def main(argv: list[str] | None = None) -> int:
    """``robolab-train``: the exit status, with bad input reported in one line."""
    return one_line_errors(lambda: train(argv))


if __name__ == "__main__":
    sys.exit(main())
