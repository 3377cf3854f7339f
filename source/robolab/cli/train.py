"""``scripts/train.py``: one entry point for a laptop CPU, every GPU of a node, and many nodes.

Known flags are parsed with argparse; everything else is handed to Hydra as overrides
(``agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time=0.5``). How the run is assembled is in
``robolab.session``; this module parses and prints.
"""

from __future__ import annotations

import argparse
import sys

from robolab import tasks
from robolab.cli import bare_resume, one_line_errors, parse
from robolab.session import (
    DEFAULT_AGENT,
    DEFAULT_LOG_ROOT,
    DEFAULT_TASK,
    LOGGERS,
    TrainOptions,
    prepare_training,
    run_training,
)


def isaaclab_launcher_parser() -> argparse.ArgumentParser | None:
    """Isaac Lab's launcher flags (``add_launcher_args``: ``--visualizer``, ``--kit_args``, ``--livestream``, ...)
    as a parent parser, where Isaac Lab is installed."""
    if not tasks.isaaclab_installed():
        return None
    from isaaclab.app import add_launcher_args

    parent = argparse.ArgumentParser(add_help=False)
    add_launcher_args(parent)
    return parent


def build_parser() -> argparse.ArgumentParser:
    launcher = isaaclab_launcher_parser()
    p = argparse.ArgumentParser(
        description="Train a locomotion policy with RSL-RL. Isaac Lab's rsl_rl flags keep their meaning; "
        "arguments without -- are Hydra overrides (agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time=0.5), "
        "except Isaac Lab's preset tokens (physics=NAME, presets=A,B, renderer=NAME), which select Isaac Lab presets.",
        epilog="example: python scripts/train.py --task RoboLab-Velocity-Flat-Go2-v0 --max_iterations 300 "
        "agent.algorithm.learning_rate=3e-4",
        parents=[launcher] if launcher is not None else [],
        conflict_handler="resolve",  # robolab's --device (cpu, cuda, cuda:N, or the rank's GPU) replaces Isaac Lab's
    )
    p.set_defaults(isaaclab_launcher_flags=launcher_flags(launcher))
    p.add_argument("--task", default=DEFAULT_TASK, help="task id (see --list_tasks)")
    p.add_argument("--list_tasks", action="store_true", help="print the registered task ids and exit")
    p.add_argument(
        "--agent", default=DEFAULT_AGENT, help="the task's agent config entry point (--list_tasks shows each task's)"
    )
    p.add_argument("--num_envs", type=int, default=None, help="environments per process")
    p.add_argument(
        "--max_iterations",
        type=int,
        default=None,
        help="a new run: iterations to train; --resume (or --load_run/--checkpoint): that many more, as in Isaac Lab; "
        "a restarted job (--resume auto, torchrun or Slurm restart) keeps its planned final iteration",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="base seed, each process adds its global rank; -1 draws one (logged)"
    )
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--distributed", action="store_true", help="one process per GPU (or CPU rank) from the launcher")
    p.add_argument("--headless", action="store_true", help="no window (the embedded sim never opens one)")
    p.add_argument(
        "--enable_cameras", action="store_true", help="Isaac Lab tasks: render camera sensors (Kit) without a window"
    )
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
    sweep = p.add_argument_group("sweeps (Hydra multirun: every job trains in its own process)")
    sweep.add_argument("-m", "--multirun", action="store_true", help="sweep over comma-separated override values")
    sweep.add_argument(
        "--nproc_per_node",
        type=int,
        default=None,
        help="processes per sweep job with --distributed (default: visible GPUs, else 1)",
    )
    sweep.add_argument(
        "--jobs_per_node",
        type=int,
        default=None,
        help="sweep jobs run side by side, each on its own GPUs (default: visible GPUs / GPUs per job; 1 on a CPU)",
    )
    sweep.add_argument("--sweep_dir", default=None, help="sweep directory (default: multirun/<timestamp>)")
    return p


def launcher_flags(launcher: argparse.ArgumentParser | None) -> dict[str, object]:
    """Isaac Lab's launcher flags robolab passes on, by destination, with their defaults."""
    if launcher is None:
        return {}
    skip = {"help", "device"}
    return {a.dest: a.default for a in launcher._actions if a.option_strings and a.dest not in skip}


def isaaclab_launcher_args(args: argparse.Namespace) -> dict[str, object]:
    """What Isaac Lab's ``launch_simulation`` reads: ``--headless``, ``--enable_cameras`` and the launcher flags
    given on the command line (the rest keep Isaac Lab's defaults)."""
    given = {
        dest: getattr(args, dest)
        for dest, default in args.isaaclab_launcher_flags.items()
        if hasattr(args, dest) and getattr(args, dest) != default
    }
    if given and not tasks.is_isaaclab_task(args.task):
        flag = next(iter(given))
        raise ValueError(f"--{flag}: an Isaac Lab launch flag; {args.task} is an embedded MuJoCo task")
    return {"headless": args.headless, "enable_cameras": args.enable_cameras, **given}


def parse_flags(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The flags and the Hydra overrides; a bare ``--resume`` before an override means ``latest``."""
    argv = bare_resume(sys.argv[1:] if argv is None else argv)
    if tasks.isaaclab_installed():
        from isaaclab.app.sim_launcher import fuse_kit_args

        argv = fuse_kit_args(argv)  # --kit_args "--flag" (a value that looks like a flag), as Isaac Lab takes it
    return parse(build_parser(), argv)


def train(argv: list[str] | None = None) -> dict | None:
    args, hydra_overrides = parse_flags(argv)
    if args.list_tasks:
        for task_id in tasks.list_tasks():
            agents = ", ".join(a for a in tasks.agent_entry_points(task_id) if a != DEFAULT_AGENT)
            more = f" (--agent {agents})" if agents else ""
            print(f"{task_id:40s} {tasks.description(task_id)}{more}")
        return None
    args.isaaclab_launcher = isaaclab_launcher_args(args)
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
