"""``scripts/train.py``: one entry point for a laptop CPU, every GPU of a node, and many nodes.

Known flags are parsed with argparse; everything else is handed to Hydra as overrides
(``agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time=0.5``). With ``--distributed`` each process
reads its rank from the launcher (torchrun, Slurm, Open MPI), uses ``cuda:<LOCAL_RANK>`` (or the CPU with
gloo) and seed ``base + global rank``; rank 0 alone creates the run directory and writes files.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
from omegaconf import OmegaConf

from robolab import checkpoint, distributed, tasks
from robolab.config import ConfigError, agent_dict, build_env_cfg, compose, to_yaml
from robolab.distributed import DistributedContext
from robolab.runners import DistillationRunner, TrainingStopped


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Train a locomotion policy with RSL-RL. Unknown arguments are Hydra overrides.",
        epilog="example: python scripts/train.py --task RoboLab-Velocity-Flat-Go2-v0 agent.algorithm.learning_rate=3e-4",
    )
    p.add_argument("--task", default="RoboLab-Velocity-Flat-Go2-v0", help="task id (see --list_tasks)")
    p.add_argument("--list_tasks", action="store_true", help="print the registered task ids and exit")
    p.add_argument("--num_envs", type=int, default=None, help="environments per process")
    p.add_argument("--max_iterations", type=int, default=None, help="final training iteration count")
    p.add_argument("--seed", type=int, default=None, help="base seed; each process adds its global rank")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--distributed", action="store_true", help="one process per GPU (or CPU rank) from the launcher")
    p.add_argument("--headless", action="store_true", help="accepted for Isaac Lab parity; the embedded sim never opens a window")
    p.add_argument("--log_root", default=os.path.join("logs", "robolab"), help="root of all experiment directories")
    p.add_argument("--run_name", default=None, help="suffix of the run directory name")
    p.add_argument(
        "--resume", nargs="?", const="latest", default=None, metavar="auto|latest|RUN_DIR|CHECKPOINT",
        help="continue the newest run of the experiment (latest), the newest if any else start fresh (auto), "
        "or a given run directory or checkpoint file",
    )
    p.add_argument("--check_replication_every", type=int, default=None, help="compare all ranks every N iterations")
    p.add_argument("--teacher_checkpoint", default=None,
                   help="distillation: the PPO checkpoint of the teacher (default: newest of agent.teacher_experiment)")
    sweep = p.add_argument_group("sweeps (Hydra multirun: every job trains in its own process)")
    sweep.add_argument("-m", "--multirun", action="store_true", help="sweep over comma-separated override values")
    sweep.add_argument("--nproc_per_node", type=int, default=None,
                       help="processes per sweep job with --distributed (default: visible GPUs, else 1)")
    sweep.add_argument("--sweep_dir", default=None, help="sweep directory (default: multirun/<timestamp>)")
    return p


@dataclass
class RunPlan:
    """Where this run writes and what it resumes from; decided on rank 0 and broadcast."""

    run_dir: str
    resume_checkpoint: str | None


def _positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise ConfigError(f"--{name}={value}: must be a positive integer")


def cli_overrides(args: argparse.Namespace) -> list[str]:
    """Command-line flags expressed as Hydra overrides (they win over the task's defaults)."""
    _positive("num_envs", args.num_envs)
    _positive("max_iterations", args.max_iterations)
    out = []
    if args.num_envs is not None:
        out.append(f"env.num_envs={args.num_envs}")
    if args.max_iterations is not None:
        out.append(f"agent.max_iterations={args.max_iterations}")
    if args.seed is not None:
        out.append(f"seed={args.seed}")
    if args.run_name is not None:
        out.append(f"agent.run_name={args.run_name}")
    if args.check_replication_every is not None:
        out.append(f"distributed.check_replication_every={args.check_replication_every}")
    if args.teacher_checkpoint is not None:
        out.append(f"++agent.teacher_checkpoint={args.teacher_checkpoint}")
    return out


def find_teacher(agent: dict, log_root: str) -> str:
    """The teacher file of a distillation run: given, or the newest checkpoint of the teacher experiment."""
    given = agent.get("teacher_checkpoint")
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"--teacher_checkpoint={given!r}: no such file")
        return given
    experiment_dir = os.path.join(log_root, agent.get("teacher_experiment") or "")
    run_dir = checkpoint.latest_run(experiment_dir)
    if run_dir is None:
        raise FileNotFoundError(
            f"no teacher checkpoint: none under {experiment_dir!r}; train the teacher task first or pass --teacher_checkpoint"
        )
    return checkpoint.latest_checkpoint(run_dir)


def plan_run(log_root: str, experiment: str, run_name: str, resume: str | None) -> RunPlan:
    """Pick the run directory: a new timestamped one, or the one being resumed. Runs on rank 0 only.

    ``latest`` and ``auto`` take the newest run of the experiment that holds a checkpoint (of those named
    ``*_<run_name>`` when a run name is set, so a restarted job finds its own run); ``auto`` starts a new run
    when there is none, which makes it the setting for jobs that a launcher may restart.
    """
    experiment_dir = os.path.join(log_root, experiment)
    if resume in ("latest", "auto"):
        run_dir = checkpoint.latest_run(experiment_dir, suffix=f"_{run_name}" if run_name else "")
        if run_dir is not None:
            return RunPlan(run_dir, checkpoint.latest_checkpoint(run_dir))
        if resume == "latest":
            raise FileNotFoundError(f"--resume: no run with a checkpoint under {experiment_dir!r}")
    elif resume is not None:
        if os.path.isfile(resume):
            checkpoint.checkpoint_iteration(resume)  # validates the name
            return RunPlan(os.path.dirname(os.path.abspath(resume)), os.path.abspath(resume))
        found = checkpoint.latest_checkpoint(resume)
        if found is None:
            raise FileNotFoundError(f"--resume={resume!r}: not a checkpoint file nor a run directory with one")
        return RunPlan(os.path.abspath(resume), found)
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    name = stamp + (f"_{run_name}" if run_name else "")
    os.makedirs(experiment_dir, exist_ok=True)
    for attempt in range(100):  # two runs started in the same second get distinct directories
        run_dir = os.path.join(experiment_dir, name if attempt == 0 else f"{name}-{attempt}")
        try:
            os.mkdir(run_dir)
            return RunPlan(os.path.abspath(run_dir), None)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a new run directory for {name!r} under {experiment_dir!r}")


class ConsoleLog:
    """Copy of everything rank 0 prints, appended to ``<run>/console.log`` (a resumed run continues it)."""

    def __init__(self, path: str, stream):
        self.file = open(path, "a", buffering=1)
        self.stream = stream

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def write_text_atomic(path: str, text: str) -> None:
    checkpoint.atomic_write(path, lambda f: f.write(text), binary=False)


def share_cpu_cores(env_cfg, ctx: DistributedContext) -> None:
    """Ranks on one node split its cores instead of each taking all of them (oversubscription halves speed).

    With a GPU the physics threads leave one core of the share to the thread that drives the GPU: on 2 x H200
    (32 cores) 2 ranks x 16 physics threads scaled at 0.84, 2 x 15 at 0.94 (docs/benchmarks/h200_x2/).
    """
    cores = distributed.cpu_share(ctx)
    # An explicit OMP_NUM_THREADS (torchrun sets 1 per worker) wins for torch's own threads.
    omp = os.environ.get("OMP_NUM_THREADS", "")
    torch.set_num_threads(int(omp) if omp.isdigit() and int(omp) > 0 else cores)
    if env_cfg.backend.num_threads is None:
        gpu = str(env_cfg.device).startswith("cuda")
        env_cfg.backend.num_threads = max(1, cores - 1) if gpu and cores > 2 else cores


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def summary(runner, task_id: str, ctx: DistributedContext, wall_s: float, start_it: int) -> dict:
    """Whole-job figures: env steps count every rank (num_steps_per_env x num_envs x world_size)."""
    steps_per_it = runner.cfg["num_steps_per_env"] * runner.env.num_envs * ctx.world_size
    iterations = runner.current_learning_iteration + 1
    session_steps = (iterations - start_it) * steps_per_it
    latest = runner.logger.latest
    return {
        "task": task_id,
        "world_size": ctx.world_size,
        "num_envs_per_rank": runner.env.num_envs,
        "iterations": iterations,
        "session_iterations": iterations - start_it,
        "total_env_steps": iterations * steps_per_it,
        "session_env_steps": session_steps,
        "wall_s": round(wall_s, 3),
        "env_steps_per_s": round(session_steps / wall_s, 1) if wall_s > 0 else None,
        "mean_reward": latest.get("Train/mean_reward"),
        "mean_episode_length": latest.get("Train/mean_episode_length"),
        # Isaac Lab's velocity command logs the same quantity (mean xy error, m/s) under its own name.
        "lin_vel_tracking_error": latest.get(
            "Metrics/lin_vel_tracking_error", latest.get("Metrics/base_velocity/error_vel_xy")
        ),
        "fall_rate": latest.get("Metrics/fall_rate"),
        "non_finite_resets": latest.get("Metrics/non_finite_total"),
        "latest_logged": {k: round(v, 6) for k, v in sorted(latest.items())},  # every statistic, last global value
    }


@contextlib.contextmanager
def stop_on_signals(runner):
    """SIGTERM (Slurm pre-emption, ``timeout``) and SIGINT end training after the current iteration, saved."""

    def request_stop(signum, _frame):
        print(f"[robolab] received {signal.Signals(signum).name}: stopping after this iteration")
        runner.stop_requested = True

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def embedded_env_cfg(task_id: str, env_overrides, seed: int, device: str):
    """The embedded task's env dataclass with ``env.*`` overrides, seed and device; None for an Isaac Lab task."""
    if tasks.is_isaaclab_task(task_id):
        return None  # Isaac Lab builds and checks its own config when the env is opened
    env_cfg = build_env_cfg(task_id, env_overrides)
    env_cfg.seed, env_cfg.device = seed, device
    return env_cfg


def open_env(task_id: str, env_cfg, env_overrides, device: str, seed: int, closer: contextlib.ExitStack):
    """The task's env (closed by ``closer``) and the config it was built from, for ``params/env.yaml``.

    ``env_cfg`` comes from ``embedded_env_cfg``; for an Isaac Lab task it is None and ``env_overrides`` are applied
    to Isaac Lab's config instead.
    """
    if env_cfg is None:
        from robolab.tasks.isaaclab.vecenv import env_config_dict, make_isaaclab_env

        env = make_isaaclab_env(task_id, OmegaConf.to_container(env_overrides, resolve=True), device, seed, closer)
        return env, env_config_dict(env)
    from robolab.envs import VelocityEnv  # heavy imports after the cheap checks

    env = VelocityEnv(env_cfg)
    closer.callback(env.close)
    return env, env_cfg


@dataclass
class TrainingSession:
    """Everything ``setup`` builds: run it with ``run_training``, or inspect it (tests, notebooks)."""

    task_id: str
    ctx: DistributedContext
    plan: RunPlan
    env: object
    runner: object
    max_iterations: int
    closer: contextlib.ExitStack
    """Closes the env (and, for an Isaac Lab task, the simulation)."""


def setup(args: argparse.Namespace, hydra_overrides: list[str]) -> TrainingSession:
    """Validate, join the process group, build env and runner, and load the resume checkpoint."""
    ctx = distributed.read_context() if args.distributed else DistributedContext()
    if args.distributed and not ctx.is_distributed:
        print("[robolab] --distributed without launcher variables (torchrun, Slurm, Open MPI): running one process")
    device = distributed.resolve_device(args.device, ctx)
    cfg = compose(args.task, cli_overrides(args) + hydra_overrides)
    backend = distributed.backend_for(device, cfg.distributed.backend) if ctx.is_distributed else None
    distributed.initialize(ctx, device, backend, timeout_s=float(cfg.distributed.timeout_s))
    distributed.check_config_consistency(OmegaConf.to_container(cfg, resolve=True))

    seed = int(cfg.seed) + ctx.rank  # global rank: local ranks repeat across nodes
    seed_everything(seed)
    agent = agent_dict(cfg)
    agent["seed"] = seed
    env_cfg = embedded_env_cfg(args.task, cfg.env, seed, device)  # config errors before any run directory
    if env_cfg is not None:
        share_cpu_cores(env_cfg, ctx)
    plan = distributed.run_on_main(plan_run, args.log_root, agent["experiment_name"], agent["run_name"], args.resume)
    num_envs = env_cfg.num_envs if env_cfg is not None else cfg.env.get("num_envs", "the task's")
    print(
        f"[robolab] rank {ctx.rank}/{ctx.world_size} (local rank {ctx.local_rank}, launcher {ctx.launcher}): "
        f"device {device}, seed {seed}, {num_envs} envs"
    )

    from rsl_rl.utils import resolve_callable

    closer = contextlib.ExitStack()
    env, env_params = open_env(args.task, env_cfg, cfg.env, device, seed, closer)
    runner = resolve_callable(agent["runner_class_name"])(
        env, agent, log_dir=plan.run_dir if ctx.is_main else None, device=device, dist_ctx=ctx,
        check_replication_every=int(cfg.distributed.check_replication_every),
        dist_timeout_s=float(cfg.distributed.timeout_s),
    )
    if ctx.is_main:
        sys.stdout = ConsoleLog(os.path.join(plan.run_dir, "console.log"), sys.stdout)
        write_text_atomic(os.path.join(plan.run_dir, "params", "env.yaml"), to_yaml(env_params))
        write_text_atomic(os.path.join(plan.run_dir, "params", "agent.yaml"), to_yaml(agent))
        print(f"[robolab] run directory: {plan.run_dir}")
    if plan.resume_checkpoint:
        runner.load(plan.resume_checkpoint, map_location=device)
        print(f"[robolab] rank {ctx.rank}: resumed {plan.resume_checkpoint} at iteration {runner.current_learning_iteration}")
    elif isinstance(runner, DistillationRunner):
        runner.load_teacher(distributed.run_on_main(find_teacher, agent, args.log_root))
    return TrainingSession(args.task, ctx, plan, env, runner, int(agent["max_iterations"]), closer)


def run_training(session: TrainingSession) -> dict:
    """Train up to the final iteration (or until SIGTERM/SIGINT) and write ``summary.json`` on rank 0."""
    runner, ctx = session.runner, session.ctx
    start_it = runner.current_learning_iteration
    remaining = session.max_iterations - start_it
    start = time.time()
    stopped = False
    with stop_on_signals(runner):
        try:
            if remaining > 0:
                runner.learn(num_learning_iterations=remaining, init_at_random_ep_len=start_it == 0)
            else:
                runner.current_learning_iteration = start_it - 1
        except TrainingStopped as stop:
            print(f"[robolab] rank {ctx.rank}: {stop}; checkpoint written")
            stopped = True
    result = summary(runner, session.task_id, ctx, time.time() - start, start_it)
    result["stopped_early"] = stopped
    if ctx.is_main:
        write_text_atomic(os.path.join(session.plan.run_dir, "summary.json"), json.dumps(result, indent=2) + "\n")
        print(f"[robolab] summary: {json.dumps(result)}")
    return result


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
    session = setup(args, hydra_overrides)
    try:
        return run_training(session)
    finally:
        session.closer.close()
        if isinstance(sys.stdout, ConsoleLog):
            sys.stdout.file.close()
            sys.stdout = sys.stdout.stream


def main(argv: list[str] | None = None) -> int:
    try:
        train(argv)
    except (ConfigError, distributed.DistributedConfigError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        distributed.shutdown()
        return 2
    distributed.shutdown()
    return 0
