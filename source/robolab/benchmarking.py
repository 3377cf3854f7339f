"""Throughput of physics, rollout and training, as plain figures for ``scripts/benchmark.py``'s JSON.

Single process: physics-only env steps/s, rollout env steps/s with the policy in the loop, per-iteration
collect and update time of full training iterations, and the ratio rollout/physics.

Distributed (under torchrun): the same training figures per rank plus the time spent in the gradient
all-reduce; steps/s count all ranks. ``scaling`` launches one torchrun job per world size and reports scaling
efficiency = steps/s(N) / (N x steps/s(1)), all from one invocation.

``--update``: robolab's PPO update against rsl_rl's own on one real rollout of the task, alternately, in one process
(``time_update``): the ratio of the two is the figure, measured in one run.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from robolab import distributed
from robolab.envs.captured_step import StepGraph
from robolab.matmul_precision import models_precision
from robolab.rsl_rl_api import PPO as RslRlPPO
from robolab.session import prepare_benchmark

WARM_UP_STEPS = StepGraph.WARM_UP + 2
"""Rollout steps before the timed ones: ``env.cuda_graph``'s eager steps, the step that captures, and one replay."""


def _sync(device: str, backend=None) -> None:
    """Wait for the GPU: torch's streams and, for a JAX backend, its own queue too."""
    if backend is not None:
        backend.synchronize()
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def time_physics(env, steps: int) -> float:
    """Env steps/s of the physics alone (the backend and any explicit actuator models), holding the nominal pose plus
    small random offsets."""
    targets = env.default_joint_pos.expand(env.num_envs, -1)
    noise = 0.1 * torch.randn(steps, env.num_envs, env.num_actions, device=env.device)
    env.step_physics(targets)  # warm-up (and compilation, for a JIT backend)
    _sync(str(env.device), env.backend)
    start = time.perf_counter()
    for i in range(steps):
        env.step_physics(targets + noise[i])
        _ = env.backend.non_finite  # what the env reads every step
    _sync(str(env.device), env.backend)
    return env.num_envs * steps / (time.perf_counter() - start)


def time_rollout(env, policy, steps: int) -> float:
    """Env steps/s of the full MDP step with the policy choosing actions."""
    obs = env.get_observations()
    with torch.inference_mode():
        # Warm-up: first-call set-ups and, with env.cuda_graph, the step's capture (after two eager steps), which
        # would otherwise be timed as if it were stepping.
        for _ in range(WARM_UP_STEPS):
            obs, *_ = env.step(policy(obs))
        _sync(str(env.device), env.backend)
        start = time.perf_counter()
        for _ in range(steps):
            obs, *_ = env.step(policy(obs))
        _sync(str(env.device), env.backend)
    return env.num_envs * steps / (time.perf_counter() - start)


def in_precision(policy, precision: str):
    """``policy`` called in the runner's matmul precision, as training calls it (``robolab.matmul_precision``)."""

    def act(obs):
        with models_precision(precision):
            return policy(obs)

    return act


def instrument_allreduce(alg) -> dict:
    """Accumulate wall time spent in the algorithm's gradient reduction (synchronised, so it is exact)."""
    spent = {"s": 0.0, "calls": 0}
    original = alg.reduce_parameters

    def timed():
        _sync(alg.device)
        start = time.perf_counter()
        original()
        _sync(alg.device)
        spent["s"] += time.perf_counter() - start
        spent["calls"] += 1

    alg.reduce_parameters = timed
    return spent


def benchmark(args: argparse.Namespace, overrides: list[str]) -> dict:
    """Physics-only, rollout and training throughput of one task on this rank (or world): the JSON of
    ``scripts/benchmark.py``."""
    job, env, runner, agent, closer = prepare_benchmark(
        args.task, [f"env.num_envs={args.num_envs}", *overrides], args.device, args.distributed
    )
    ctx, device = job.ctx, job.device
    result: dict = {
        "task": args.task,
        "device": device,
        "device_name": _device_name(device),
        "world_size": ctx.world_size,
        "num_envs_per_rank": env.num_envs,
        "num_steps_per_env": agent["num_steps_per_env"],
        "backend": env.cfg.backend.name,
        "threads": getattr(env.backend, "num_threads", None),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "matmul_precision": runner.matmul_precision,
    }
    with closer:
        if args.update:
            result.update(time_update(runner, args.iterations))
            return result
        if not args.skip_physics and ctx.is_main:
            policy = in_precision(runner.get_inference_policy(device=device), runner.matmul_precision)
            result["physics_env_steps_per_s"] = round(time_physics(env, args.physics_steps), 1)
            result["rollout_env_steps_per_s"] = round(time_rollout(env, policy, args.physics_steps), 1)
            result["rollout_over_physics"] = round(
                result["rollout_env_steps_per_s"] / result["physics_env_steps_per_s"], 3
            )
            runner.alg.train_mode()
        result.update(time_training(runner, ctx.world_size, args.iterations))
        if "physics_env_steps_per_s" in result:
            result["train_over_physics"] = round(result["train_env_steps_per_s"] / result["physics_env_steps_per_s"], 3)
        result.update(_memory(device, env))
    return result


def time_training(runner, world_size: int, iterations: int) -> dict:
    """Per-iteration collect and update time and env steps/s of ``iterations`` full iterations after a warm-up."""
    allreduce = instrument_allreduce(runner.alg)
    # Warm-up iterations: allocations, the first all-reduce and, with agent.algorithm.cuda_graph, the update's capture
    # (the first update makes the optimiser's state, the second captures), which would otherwise be timed.
    runner.learn(2)
    allreduce.update(s=0.0, calls=0)
    runner.logger.timings.clear()
    distributed.barrier()
    start = time.perf_counter()
    runner.learn(iterations)
    wall = time.perf_counter() - start
    collect = [c for c, _ in runner.logger.timings]
    learn = [u for _, u in runner.logger.timings]
    steps_per_it = runner.cfg["num_steps_per_env"] * runner.env.num_envs * world_size
    return {
        "iterations": iterations,
        "collect_s_per_iter": round(sum(collect) / len(collect), 4),
        "update_s_per_iter": round(sum(learn) / len(learn), 4),
        "allreduce_s_per_iter": round(allreduce["s"] / iterations, 4),
        "allreduce_share_of_update": round(allreduce["s"] / max(sum(learn), 1e-9), 4),
        "update_share_of_iter": round(sum(learn) / max(sum(collect) + sum(learn), 1e-9), 4),
        "train_env_steps_per_s": round(steps_per_it * iterations / wall, 1),
    }


def rsl_rl_twin(alg) -> RslRlPPO:
    """rsl_rl's own PPO with copies of ``alg``'s models, its settings, its optimiser class and its storage."""
    names = ("num_learning_epochs", "num_mini_batches", "clip_param", "gamma", "lam", "value_loss_coef")
    names += ("entropy_coef", "learning_rate", "max_grad_norm", "use_clipped_value_loss", "schedule", "desired_kl")
    names += ("normalize_advantage_per_mini_batch", "use_mixed_precision", "device")
    twin = RslRlPPO(
        copy.deepcopy(alg.models["actor"]),
        copy.deepcopy(alg.models["critic"]),
        alg.storage,
        **{name: getattr(alg, name) for name in names},
    )
    twin.optimizer = type(alg.optimizer)(twin.optimizer.param_groups[0]["params"], lr=alg.learning_rate)
    twin.rnd, twin.symmetry = alg.rnd, alg.symmetry
    return twin


def time_update(runner, repeats: int) -> dict:
    """Milliseconds per ``update()`` of robolab's PPO and of rsl_rl's (a twin with copied models), alternately on the
    same real rollout of the task, after one warm-up update each. The update does not consume the rollout (rsl_rl's
    ``storage.clear()`` only rewinds the step counter), so every call does the same work."""
    alg = runner.alg
    if not isinstance(alg, RslRlPPO) or type(alg).__name__ != "PPO":
        raise ValueError(f"--update times PPO's update; this task's algorithm is {type(alg).__name__}")
    alg.train_mode()
    runner._collect(runner.env.get_observations().to(runner.device))
    twin = rsl_rl_twin(alg)
    twin.train_mode()
    times: dict[str, list[float]] = {"robolab": [], "rsl_rl": []}
    for k in range(repeats + 1):
        for name, algorithm in (("robolab", alg), ("rsl_rl", twin)):
            _sync(alg.device)
            start = time.perf_counter()
            with models_precision(runner.matmul_precision):  # both in training's precision
                algorithm.update()
            _sync(alg.device)
            if k > 0:  # the first of each allocates the optimiser's state
                times[name].append(1000 * (time.perf_counter() - start))
    ours, theirs = statistics.median(times["robolab"]), statistics.median(times["rsl_rl"])
    return {
        "update_repeats": repeats,
        "update_epochs": alg.num_learning_epochs,
        "update_minibatches": alg.num_mini_batches,
        "update_ms_robolab": round(ours, 2),
        "update_ms_rsl_rl": round(theirs, 2),
        "update_rsl_rl_over_robolab": round(theirs / ours, 3),
        "update_ms_each": {name: [round(t, 2) for t in ts] for name, ts in times.items()},
        "optimizer": f"{type(alg.optimizer).__name__} {getattr(alg.optimizer, 'defaults', {}).get('fused')}",
    }


def _memory(device: str, env) -> dict:
    """Peak accelerator memory of this process: torch's allocator plus the physics backend's own (JAX)."""
    if not device.startswith("cuda"):
        return {}
    torch_bytes = torch.cuda.max_memory_allocated(device)
    backend_bytes = env.backend.device_memory_bytes() or 0
    total = torch_bytes + backend_bytes
    return {
        "gpu_peak_torch_gib": round(torch_bytes / 2**30, 3),
        "gpu_peak_backend_gib": round(backend_bytes / 2**30, 3),
        "gpu_peak_total_gib": round(total / 2**30, 3),
        "gpu_bytes_per_env": round(total / env.num_envs),
    }


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine()


def scaling_sizes(text: str) -> list[int]:
    """The world sizes of ``--scaling``: positive, rising, the first 1 (the baseline)."""
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or sizes[0] != 1 or any(b <= a for a, b in itertools.pairwise(sizes)):
        raise ValueError(f"--scaling={text!r}: must be rising world sizes starting with 1 (the baseline), e.g. 1,2")
    return sizes


def scaling_rank_command(args: argparse.Namespace, overrides: list[str], world_size: int, output: str) -> list[str]:
    """The torchrun command that benchmarks ``world_size`` ranks with this invocation's task, sizes, device and
    overrides (only the training is timed: physics alone is per process and does not scale)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={world_size}",
        "-m",
        "robolab.cli.benchmark",
        "--distributed",
        "--skip_physics",
        "--task",
        args.task,
        "--num_envs",
        str(args.num_envs),
        "--iterations",
        str(args.iterations),
        "--output",
        output,
        *(["--device", args.device] if args.device else []),
        *overrides,
    ]


def scaling(args: argparse.Namespace, overrides: list[str]) -> dict:
    """Run the benchmark under torchrun at each world size and compare them."""
    sizes = scaling_sizes(args.scaling)
    if args.update:
        raise ValueError("--update times one process's PPO update: it cannot be combined with --scaling")
    runs = {}
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            subprocess.run(scaling_rank_command(args, overrides, n, out), check=True)
            with open(out) as f:
                runs[n] = json.load(f)
    base = runs[1]["train_env_steps_per_s"]
    return {
        "scaling": {
            str(n): {**r, "scaling_efficiency": round(r["train_env_steps_per_s"] / (n * base), 4)}
            for n, r in runs.items()
        },
        "command": " ".join(sys.argv),
    }
