"""How a run is assembled, for training, evaluation and benchmarks alike.

1. ``join``: the rank layout from the launcher, this rank's device, the composed config; the process group is
   started here and nowhere else, and every rank checks that the others composed the same config.
2. ``open_env``: the task's env (the embedded MuJoCo MDP or an Isaac Lab env), its config validated first.
3. ``build_runner``: the rsl_rl runner the agent config names, on this rank's device.

``prepare_training`` adds the run directory (chosen on rank 0, broadcast), the files rank 0 writes and the
checkpoint or teacher to load; ``run_training`` trains to the final iteration and writes ``summary.json``.
``prepare_policy`` (``play.py``) and ``prepare_benchmark`` (``benchmark.py``) reuse the same three steps.
The ``cli`` modules only parse arguments and print.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import signal
import time
from dataclasses import dataclass

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from robolab import console, distributed, files, runs, tasks
from robolab.config import ConfigError, agent_dict, compose, plain, saved_agent_dict
from robolab.distributed import DistributedContext, default_compile_workers
from robolab.launch import DEFAULT_AGENT, TrainOptions, VideoOptions, log_writer_cfg
from robolab.resources import check_fits
from robolab.rsl_rl_api import VecEnv, resolve_callable
from robolab.runners import OnPolicyRunner
from robolab.video import TrainingVideo

MAX_SEED = 2**62
"""The largest base seed: each rank adds its rank, and torch and NumPy take 64-bit seeds."""


# --- the three steps every program takes ------------------------------------------------------------------
@dataclass
class Job:
    """Who this process is in the job, where it runs and with which config."""

    ctx: DistributedContext
    device: str
    cfg: DictConfig
    seed: int
    """The config's seed plus the global rank (local ranks repeat across nodes)."""


def join(task: str, overrides: list[str], device: str | None, distributed_run: bool, agent: str = DEFAULT_AGENT) -> Job:
    """Read the rank layout, pick the device, compose the config and start the process group."""
    ctx = distributed.read_context() if distributed_run else DistributedContext()
    distributed.end_with_launcher()
    if distributed_run and not ctx.is_distributed:
        print("[robolab] --distributed without launcher variables (torchrun, Slurm, Open MPI): running one process")
    device = distributed.resolve_device(device, ctx)
    cfg = compose(task, overrides, agent=agent)
    backend = distributed.backend_for(device, cfg.distributed.backend) if ctx.is_distributed else None
    distributed.initialize(ctx, device, backend, timeout_s=float(cfg.distributed.timeout_s))
    if int(cfg.seed) == -1:  # Isaac Lab's "random seed": drawn once, on rank 0, so every rank agrees
        cfg.seed = distributed.run_on_main(random.SystemRandom().randint, 0, 2**31 - 1)
        print(f"[robolab] seed -1: drew seed {cfg.seed} (recorded in params/agent.yaml)")
    elif not -1 <= int(cfg.seed) <= MAX_SEED:
        raise ConfigError(f"seed={cfg.seed}: must be in [0, 2**62], or -1 for a random seed")
    distributed.check_config_consistency(plain(cfg))
    return Job(ctx, device, cfg, int(cfg.seed) + ctx.rank)


def env_config(task: str, job: Job, saved: dict | None = None):
    """The task's env config (a run's ``saved`` env config, then ``env.*`` applied; seed, device), as its kind
    builds it; None where the env builds its own (Isaac Lab)."""
    return tasks.kind_of(task).env_config(task, job, saved)


def open_env(
    task: str,
    env_cfg,
    job: Job,
    closer: contextlib.ExitStack,
    video=None,
    launcher: dict | None = None,
    clip_actions: float | None = None,
):
    """The task's env (closed by ``closer``) and the config it was built from, for ``params/env.yaml``.

    ``video`` (``VideoOptions``) configures the recorder of a kind that records through its env (Isaac Lab); other
    envs are wrapped instead. ``launcher`` (Isaac Lab's launcher arguments) and ``clip_actions`` (the agent's) go to
    the kinds that take them.
    """
    kind = tasks.kind_of(task)
    kind.check_agent(task, {"clip_actions": clip_actions})
    return kind.open_env(task, env_cfg, job, closer, video, launcher, clip_actions)


def check_obs_groups(env, agent: dict, task: str | None) -> None:
    """Every observation group the agent reads is one the env has: a one-line error naming the missing group and
    how to add or map it, before rsl_rl's own check (or the AMP runner's, deeper down) would fail."""
    have = list(env.get_observations().keys())
    wanted = [(f"agent.obs_groups.{name}", group) for name, groups in agent["obs_groups"].items() for group in groups]
    if str(agent["runner_class_name"]).endswith(":AMPRunner"):
        wanted.append(("runner=amp", "amp"))
    for reader, group in wanted:
        if group in have:
            continue
        if reader == "runner=amp":
            how = tasks.kind_of(task).amp_hint if task is not None else "add an amp group"
        else:
            how = f"or map the set to a group it has: {reader}=[{have[0]}]"
        raise ConfigError(
            f"{reader} reads the observation group {group!r}, which the env of {task} does not have "
            f"(it has: {', '.join(have)}); add a group named {group} to the env config ({how})"
        )


def check_batch(env, agent: dict, job: Job) -> None:
    """PPO splits each rank's batch (envs x steps) into ``num_mini_batches``: more minibatches than samples would
    make empty ones (and an update that runs for hours); one line naming both. The rollout storage must fit."""
    batches = (agent.get("algorithm") or {}).get("num_mini_batches")
    samples = env.num_envs * int(agent["num_steps_per_env"])
    if isinstance(batches, int) and batches > samples:
        raise ConfigError(
            f"agent.algorithm.num_mini_batches={batches}: more than the {samples} samples of an iteration "
            f"({env.num_envs} envs x agent.num_steps_per_env={agent['num_steps_per_env']}); at most {samples}"
        )
    # The rollout storage holds every observation group, the actions and a few scalars per sample.
    per_sample = sum(v[0].numel() for v in env.get_observations().values()) + 3 * env.num_actions + 8
    check_fits(4 * per_sample * samples, job.device, f"the rollout of {samples} samples", "--num_envs")


def build_runner(env, agent: dict, job: Job, task: str | None = None):
    """The runner class ``agent["runner_class_name"]`` names, on this rank (no log directory yet)."""
    check_obs_groups(env, agent, task)
    check_batch(env, agent, job)
    with console.library_chatter():  # rsl_rl prints the observation sets and both networks
        return resolve_callable(agent["runner_class_name"])(
            env,
            agent,
            log_dir=None,
            device=job.device,
            dist_ctx=job.ctx,
            check_replication_every=int(job.cfg.distributed.check_replication_every),
            task_id=task,
        )


def share_cpu_cores(env_cfg, ctx: DistributedContext) -> None:
    """Ranks on one node split its cores instead of each taking all of them (oversubscription halves speed).

    With a GPU the physics threads leave one core of the share to the thread that drives the GPU
    (docs/benchmarks/README.md: 2 ranks x 16 threads on 32 cores scaled at 0.84, 2 x 15 at 0.94).
    """
    cores = distributed.cpu_share(ctx)
    # An explicit OMP_NUM_THREADS (torchrun sets 1 per worker) wins for torch's own threads.
    omp = os.environ.get("OMP_NUM_THREADS", "")
    torch.set_num_threads(int(omp) if omp.isdigit() and int(omp) > 0 else cores)
    if env_cfg.backend.num_threads is None:
        gpu = str(env_cfg.device).startswith("cuda")
        env_cfg.backend.num_threads = max(1, cores - 1) if gpu and cores > 2 else cores
    if env_cfg.backend.compile_workers is None:  # MuJoCo Warp's cold compile: the same share
        env_cfg.backend.compile_workers = default_compile_workers(cores)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# --- training ---------------------------------------------------------------------------------------------
@dataclass
class TrainingSession:
    """Everything ``prepare_training`` builds: run it with ``run_training``, or inspect it (tests, notebooks)."""

    task_id: str
    ctx: DistributedContext
    plan: runs.RunPlan
    env: VecEnv | TrainingVideo
    """The task's env (an rsl_rl ``VecEnv``; robolab's ``VelocityEnv``, an Isaac Lab env wrapped, or a user's), or on
    rank 0 with ``--video`` the recorder that wraps it and stands in for it."""
    runner: OnPolicyRunner
    """robolab's runner (``OnPolicyRunner`` or its ``AMPRunner`` / ``DistillationRunner`` subclasses)."""
    max_iterations: int
    closer: contextlib.ExitStack
    """Closes the env (and, for an Isaac Lab task, the simulation) and rank 0's console copy."""


def report_cuda_graphs(env, runner, device: str, is_main: bool = True) -> None:
    """On a GPU, print which CUDA graphs this run replays (``env.cuda_graph``; ``agent.algorithm.cuda_graph``, the PPO
    update's and the policy inference's) and the models' matmul precision (``agent.matmul_precision``): the graphs are
    on by default where they can run, and the line says where they do."""
    if not (is_main and str(device).startswith("cuda")):
        return
    env_graph = getattr(env, "step_graph", None) is not None
    supported = getattr(runner.alg, "graph_supported", None)
    update_graph = bool(supported()) if supported is not None else False
    precision = getattr(runner, "matmul_precision", "ieee")
    print(
        f"[robolab] CUDA graphs: env step {'on' if env_graph else 'off'} (env.cuda_graph), "
        f"PPO update and inference {'on' if update_graph else 'off'} (agent.algorithm.cuda_graph); "
        f"model matmuls {precision} (agent.matmul_precision)"
    )


def report_kernel_cache(env, task: str, is_main: bool = True) -> dict | None:
    """Print whether MuJoCo Warp's kernel cache was warm for this env (the first lines of a cold start are its
    compile); the report as a dict, None for a backend without one."""
    report = getattr(getattr(env, "backend", None), "kernel_cache", None)
    if report is None:
        return None
    if is_main:
        print(f"[robolab] {report.line(task)}")
    return {**dataclasses.asdict(report), "compiled": report.compiled}


def warm_up_kernels(task: str, overrides: list[str], device: str | None, steps: int) -> dict:
    """Open ``task``'s env on ``device`` (its backend compiles every kernel of a physics step into warp's kernel
    cache) and step it ``steps`` times with the default pose (the MDP's own kernels too: a ray-cast height scan's);
    what the cache held before, as ``report_kernel_cache`` reports it, and the seconds it all took."""
    start = time.perf_counter()
    job = join(task, overrides, device, False)
    with contextlib.ExitStack() as closer:
        env, _ = open_env(task, env_config(task, job), job, closer)
        report = report_kernel_cache(env, task)
        if report is None:
            raise ConfigError(f"--task {task}: its physics is not MuJoCo Warp (env.backend=warp): nothing to warm up")
        actions = torch.zeros(env.num_envs, env.num_actions, device=env.device)
        with torch.inference_mode():
            for _ in range(steps):
                env.step(actions)
        if str(env.device).startswith("cuda"):
            torch.cuda.synchronize(env.device)
    return {"task": task, "device": job.device, **report, "total_seconds": round(time.perf_counter() - start, 2)}


def prepare_training(options: TrainOptions, overrides: list[str]) -> TrainingSession:
    """Validate, join the process group, build env and runner, load the resume checkpoint, teacher or initial policy,
    and only then create the run directory and write into it: a start that fails leaves the file system as it was."""
    if options.video:
        tasks.kind_of(options.task).check_video()
    job = join(options.task, options.overrides() + overrides, options.device, options.distributed, options.agent)
    ctx = job.ctx
    seed_everything(job.seed)
    agent = agent_dict(job.cfg)
    agent["seed"] = job.seed
    agent["logger"] = log_writer_cfg(
        options.logger or agent.get("logger"), options.log_project_name, agent["experiment_name"]
    )
    if options.teacher_checkpoint is not None:
        if "teacher_checkpoint" not in agent:
            raise ConfigError("--teacher_checkpoint: only distillation runs load a teacher (runner=distillation)")
        agent["teacher_checkpoint"] = options.teacher_checkpoint
    if options.init_policy is not None:
        if "init_policy" not in agent:
            raise ConfigError("--init_policy: only PPO runs start from a policy (runner=on_policy or amp)")
        agent["init_policy"] = options.init_policy
    env_cfg = env_config(options.task, job)
    plan = distributed.run_on_main(
        runs.plan_run,
        options.log_root,
        agent["experiment_name"],
        agent["run_name"],
        options.resume,
        options.load_run,
        options.checkpoint,
        distributed.launcher_restart(),
    )
    num_envs = getattr(env_cfg, "num_envs", None) or job.cfg.env.get("num_envs", "the task's")
    print(
        f"[robolab] rank {ctx.rank}/{ctx.world_size} (local rank {ctx.local_rank}, launcher {ctx.launcher}): "
        f"device {job.device}, seed {job.seed}, {num_envs} envs, {ctx.local_world_size} process(es) on this node "
        f"sharing its cores"
    )
    video = _video_options(options, plan) if ctx.is_main else None
    recorder = None
    # Everything opened is closed if the start fails; on success the stack is handed to the session.
    with contextlib.ExitStack() as closer:
        own_recorder = tasks.kind_of(options.task).own_video_recorder
        env, env_params = open_env(
            options.task,
            env_cfg,
            job,
            closer,
            video if own_recorder else None,
            options.isaaclab_launcher,
            agent.get("clip_actions"),
        )
        report_kernel_cache(env, options.task, ctx.is_main)
        if video is not None and not tasks.kind_of(options.task).own_video_recorder:
            from robolab.video import TrainingVideo

            env = recorder = TrainingVideo(env, video.directory, video.length, video.interval)
            closer.callback(recorder.finish)
        runner = build_runner(env, agent, job, options.task)
        report_cuda_graphs(env, runner, job.device, ctx.is_main)
        if plan.resume_checkpoint:
            runner.load(plan.resume_checkpoint, map_location=job.device)
        elif "teacher_checkpoint" in agent:
            runner.load_teacher(distributed.run_on_main(runs.find_teacher, agent, options.log_root))
        elif (policy := distributed.run_on_main(runs.find_init_policy, agent, options.log_root)) is not None:
            runner.load_policy(policy)  # a restarted or resumed run has its own checkpoint, loaded above instead
        elif agent.get("init_policy_std") is not None:  # a setting that would silently do nothing
            raise ConfigError(
                f"agent.init_policy_std={agent['init_policy_std']}: sets the noise of a policy loaded by "
                "--init_policy or agent.init_policy_experiment, and this run loads none"
            )
        schedule = runs.plan_schedule(
            runner.current_learning_iteration,
            plan.restart,
            runner.planned_final_iteration,
            options.max_iterations,
            int(agent["max_iterations"]),
        )
        agent["max_iterations"] = runner.planned_final_iteration = schedule.final
        # Everything is validated and loaded: from here on the run writes, in a directory this job holds.
        run_dir = distributed.run_on_main(runs.claim_run_dir, plan, closer)
        plan = dataclasses.replace(plan, run_dir=run_dir)
        if ctx.is_main:
            if recorder is not None:
                recorder.directory = os.path.join(run_dir, "videos", "train")
            runner.logger.set_log_dir(run_dir)
            runner.add_git_repo_to_log(__file__)  # the git state of robolab's checkout, beside rsl_rl's
            record = runs.session_record(plan, ctx.world_size, schedule.start, schedule.final)
            runs.write_run_files(run_dir, env_params, agent, record, closer)
            if options.export_io_descriptors:
                params_dir = os.path.join(plan.run_dir, "params")
                tasks.kind_of(options.task).export_io_descriptors(env, params_dir)
                print(f"[robolab] IO descriptors: {params_dir}")
        if plan.resume_checkpoint:  # after the console copy opened, so the run's console.log records it
            print(
                f"[robolab] rank {ctx.rank}: resumed {plan.resume_checkpoint} "
                f"at iteration {runner.current_learning_iteration}"
            )
        if ctx.is_main:
            print(f"[robolab] {schedule.describe()}")
        closer = closer.pop_all()
    return TrainingSession(options.task, ctx, plan, env, runner, schedule.final, closer)


def _video_options(options: TrainOptions, plan: runs.RunPlan) -> VideoOptions | None:
    """Rank 0 records; the clips go to ``<run>/videos/train`` (the run is named, not yet created)."""
    if not options.video:
        return None
    run_dir = plan.run_dir or plan.planned_dir
    return VideoOptions(os.path.join(run_dir, "videos", "train"), options.video_length, options.video_interval)


def run_training(session: TrainingSession) -> dict:
    """Train up to the final iteration (or until SIGTERM/SIGINT) and write ``summary.json`` on rank 0."""
    runner, ctx = session.runner, session.ctx
    start_it = runner.current_learning_iteration
    remaining = session.max_iterations - start_it
    start = time.time()
    with stop_on_signals(runner):
        if remaining > 0:
            random_start = start_it == 0 and runner.cfg.get("init_at_random_ep_len", True)
            runner.learn(num_learning_iterations=remaining, init_at_random_ep_len=random_start)
        else:
            runner.current_learning_iteration = start_it - 1
    if runner.stopped_early:
        print(
            f"[robolab] rank {ctx.rank}: training stopped after iteration {runner.current_learning_iteration}; "
            "checkpoint written"
        )
    result = summary(runner, session.task_id, ctx, time.time() - start, start_it)
    result["stopped_early"] = runner.stopped_early
    if ctx.is_main and session.plan.run_dir is not None:
        if result["session_iterations"] > 0:
            write_summary(session.plan.run_dir, result)
            print(f"[robolab] summary: {json.dumps(result)}")
        else:  # a restart after the final checkpoint: the run's summary is the last session's, kept as it is
            print("[robolab] nothing left to train: summary.json kept as the last session wrote it")
    return result


def write_summary(run_dir: str, result: dict) -> None:
    """``summary.json``: this session's figures (``iterations`` and ``total_env_steps`` count the whole run), and
    under ``sessions`` one entry per session that trained, earlier ones kept."""
    path = os.path.join(run_dir, "summary.json")
    earlier: list = []
    with contextlib.suppress(OSError, ValueError):
        with open(path) as f:
            previous = json.load(f)
        if isinstance(previous, dict):
            earlier = previous.get("sessions") or [_session_entry(previous)]
    sessions = [*earlier, _session_entry(result)]
    files.write_text_atomic(path, json.dumps({**result, "sessions": sessions}, indent=2) + "\n")


def _session_entry(result: dict) -> dict:
    keys = ("iterations", "session_iterations", "session_env_steps", "wall_s", "env_steps_per_s", "world_size")
    return {k: result.get(k) for k in (*keys, "stopped_early")}


@contextlib.contextmanager
def stop_on_signals(runner):
    """SIGTERM (Slurm pre-emption, ``timeout``) and SIGINT end training after the current iteration, saved."""

    def request_stop(signum, _frame):
        print(f"[robolab] received {signal.Signals(signum).name}: stopping after this iteration")
        runner.request_stop()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
        "diverged_resets": latest.get("Metrics/diverged_total"),
        "latest_losses": {k: round(float(v), 6) for k, v in runner.logger.latest_losses.items()},
        "latest_logged": {k: round(v, 6) for k, v in sorted(latest.items())},  # every statistic, last global value
    }


# --- evaluation and benchmarks ----------------------------------------------------------------------------
@dataclass
class PolicySession:
    """A trained policy in its task's env, for ``play.py``."""

    env: VecEnv
    """The task's env (an rsl_rl ``VecEnv``; robolab's ``VelocityEnv``, an Isaac Lab env wrapped, or a user's)."""
    runner: OnPolicyRunner
    """robolab's runner (``OnPolicyRunner`` or its ``AMPRunner`` / ``DistillationRunner`` subclasses)."""
    checkpoint: str
    closer: contextlib.ExitStack


def prepare_policy(
    task: str,
    overrides: list[str],
    device: str,
    find_checkpoint,
    agent_entry: str = DEFAULT_AGENT,
    video_for=None,
    launcher: dict | None = None,
) -> PolicySession:
    """One process: the runner of ``find_checkpoint(agent)``'s run, loaded, in the task's env.

    The policy is built from the run's saved ``params/agent.yaml`` (network sizes, observation groups), and the
    embedded env from its ``params/env.yaml`` (observation history, commands, robot), so a run trained with
    non-default settings plays without repeating them; ``overrides`` apply on top of both. Machine-specific env
    settings (env count, seed, device, physics backend) are not taken from the run. ``video_for(checkpoint)`` gives
    an Isaac Lab env's recorder settings; ``launcher``, its launch arguments.
    """
    job = join(task, overrides, device, distributed_run=False, agent=agent_entry)
    agent = agent_dict(job.cfg)
    ckpt = find_checkpoint(agent)
    params = os.path.join(os.path.dirname(os.path.abspath(ckpt)), "params")
    saved_env, saved_agent = runs.saved_params(os.path.dirname(params))
    # The run directory's files may not choose code to import; what the command line sets is never read from them.
    overridden = {o.lstrip("+~").partition("=")[0] for o in overrides}
    runs.check_saved_names(saved_agent, "agent", os.path.join(params, "agent.yaml"), overridden)
    if tasks.kind_of(task).reads_saved_env:
        runs.check_saved_names(saved_env, "env", os.path.join(params, "env.yaml"), overridden)
    if saved_env is not None:
        for key in ("num_envs", "seed", "device", "backend"):
            saved_env.pop(key, None)
    if saved_agent is not None:
        given = OmegaConf.from_dotlist([o for o in overrides if o.startswith("agent.")]).get("agent", {})
        agent = saved_agent_dict(saved_agent, given, os.path.join(params, "agent.yaml"))
    with contextlib.ExitStack() as closer:
        video = video_for(ckpt) if video_for else None
        env_cfg = env_config(task, job, saved_env)
        env, _ = open_env(task, env_cfg, job, closer, video, launcher, agent.get("clip_actions"))
        runner = build_runner(env, agent, job, task)
        runner.load(ckpt, map_location=job.device, resume=False)  # the evaluation's own commands, terrain and seed
        closer = closer.pop_all()
    return PolicySession(env, runner, ckpt, closer)


def prepare_benchmark(task: str, overrides: list[str], device: str | None, distributed_run: bool):
    """(job, env, runner, agent) for timing: no run directory, no checkpoints (``agent.save_interval`` huge)."""
    refusal = tasks.kind_of(task).benchmark_refusal(task)
    if refusal:
        raise ConfigError(refusal)
    job = join(task, [*overrides, "agent.save_interval=1000000"], device, distributed_run)
    agent = agent_dict(job.cfg)
    with contextlib.ExitStack() as closer:
        env, _ = open_env(task, env_config(task, job), job, closer)
        runner = build_runner(env, agent, job)
        closer = closer.pop_all()
    return job, env, runner, agent, closer
