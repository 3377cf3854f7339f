"""Throughput of physics, rollout and training, as plain figures for ``scripts/benchmark.py``'s JSON.

Single process: physics-only env steps/s, rollout env steps/s with the policy in the loop, per-iteration
collect and update time of full training iterations, and the ratio rollout/physics.

Distributed (under torchrun): the same training figures per rank plus the time spent in the gradient
all-reduce; steps/s count all ranks. ``scaling`` launches one torchrun job per world size and reports scaling
efficiency = steps/s(N) / (N x steps/s(1)), all from one invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import torch

from robolab import distributed
from robolab.session import prepare_benchmark


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
        obs, *_ = env.step(policy(obs))  # warm-up
        _sync(str(env.device), env.backend)
        start = time.perf_counter()
        for _ in range(steps):
            obs, *_ = env.step(policy(obs))
        _sync(str(env.device), env.backend)
    return env.num_envs * steps / (time.perf_counter() - start)


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
    }
    with closer:
        if not args.skip_physics and ctx.is_main:
            policy = runner.get_inference_policy(device=device)
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
    runner.learn(1)  # warm-up iteration (allocations, first all-reduce)
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


def scaling(args: argparse.Namespace, overrides: list[str]) -> dict:
    """Run the benchmark under torchrun at each world size and compare them."""
    sizes = [int(s) for s in args.scaling.split(",")]
    if sizes[0] != 1:
        raise ValueError(f"--scaling={args.scaling!r}: must start with 1 (the baseline)")
    runs = {}
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            cmd = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                f"--nproc_per_node={n}",
                "-m",
                "robolab.cli.benchmark",
                "--distributed",
                "--skip_physics",
                "--num_envs",
                str(args.num_envs),
                "--iterations",
                str(args.iterations),
                "--output",
                out,
                *overrides,
            ] + (["--device", args.device] if args.device else [])
            subprocess.run(cmd, check=True)
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
