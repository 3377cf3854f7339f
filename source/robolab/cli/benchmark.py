"""``scripts/benchmark.py``: throughput of physics, rollout and training, written as JSON.

Single process: physics-only env steps/s, rollout env steps/s with the policy in the loop, per-iteration
collect and update time of full training iterations, and the ratio rollout/physics.

``--distributed`` (under torchrun): the same training figures per rank plus the time spent in the gradient
all-reduce; steps/s count all ranks. ``--scaling 1,2`` launches one torchrun job per world size itself and
reports scaling efficiency = steps/s(N) / (N x steps/s(1)), all from one invocation.
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
from robolab.cli.train import share_cpu_cores
from robolab.config import agent_dict, build_env_cfg, compose
from robolab.distributed import DistributedContext


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Benchmark physics, rollout and training throughput (JSON output).")
    p.add_argument("--task", default="RoboLab-Velocity-Flat-Go2-v0")
    p.add_argument("--num_envs", type=int, default=1024, help="envs per process")
    p.add_argument("--physics_steps", type=int, default=100, help="control steps timed for physics and rollout")
    p.add_argument("--iterations", type=int, default=5, help="training iterations timed (after one warm-up)")
    p.add_argument("--device", default=None)
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--scaling", default=None, help="comma-separated world sizes, e.g. 1,2: run each under torchrun")
    p.add_argument("--skip_physics", action="store_true", help="only time training iterations")
    p.add_argument("--output", default=None, help="write the JSON here (default: print only)")
    return p


def _sync(device: str, backend=None) -> None:
    """Wait for the GPU: torch's streams and, for a JAX backend, its own queue too."""
    if backend is not None:
        backend.synchronize()
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def time_physics(env, steps: int) -> float:
    """Env steps/s of the backend alone, holding the nominal pose plus small random offsets."""
    targets = env.default_joint_pos.expand(env.num_envs, -1)
    noise = 0.1 * torch.randn(steps, env.num_envs, env.num_actions, device=env.device)
    env.backend.step(targets, env.cfg.decimation)  # warm-up (and compilation, for a JIT backend)
    _sync(str(env.device), env.backend)
    start = time.perf_counter()
    for i in range(steps):
        env.backend.step(targets + noise[i], env.cfg.decimation)
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
    ctx = distributed.read_context() if args.distributed else DistributedContext()
    device = distributed.resolve_device(args.device, ctx)
    cfg = compose(args.task, [f"env.num_envs={args.num_envs}", "agent.save_interval=1000000", *overrides])
    distributed.initialize(ctx, device, timeout_s=float(cfg.distributed.timeout_s))
    env_cfg = build_env_cfg(args.task, cfg.env)
    env_cfg.seed, env_cfg.device = int(cfg.seed) + ctx.rank, device
    share_cpu_cores(env_cfg, ctx)
    agent = agent_dict(cfg)

    from rsl_rl.utils import resolve_callable

    from robolab.envs import VelocityEnv

    env = VelocityEnv(env_cfg)
    runner = resolve_callable(agent["runner_class_name"])(env, agent, log_dir=None, device=device, dist_ctx=ctx)
    result: dict = {
        "task": args.task, "device": device, "device_name": _device_name(device), "world_size": ctx.world_size,
        "num_envs_per_rank": env.num_envs, "num_steps_per_env": agent["num_steps_per_env"],
        "backend": env_cfg.backend.name, "threads": getattr(env.backend, "num_threads", None),
        "torch": torch.__version__, "python": platform.python_version(),
    }
    if not args.skip_physics and ctx.is_main:
        policy = runner.get_inference_policy(device=device)
        result["physics_env_steps_per_s"] = round(time_physics(env, args.physics_steps), 1)
        result["rollout_env_steps_per_s"] = round(time_rollout(env, policy, args.physics_steps), 1)
        result["rollout_over_physics"] = round(result["rollout_env_steps_per_s"] / result["physics_env_steps_per_s"], 3)
        runner.alg.train_mode()

    allreduce = instrument_allreduce(runner.alg)
    runner.learn(1)  # warm-up iteration (allocations, first all-reduce)
    allreduce.update(s=0.0, calls=0)
    runner.logger.timings.clear()
    distributed.barrier()
    start = time.perf_counter()
    runner.learn(args.iterations)
    wall = time.perf_counter() - start
    collect = [c for c, _ in runner.logger.timings]
    learn = [u for _, u in runner.logger.timings]
    steps_per_it = agent["num_steps_per_env"] * env.num_envs * ctx.world_size
    result.update({
        "iterations": args.iterations,
        "collect_s_per_iter": round(sum(collect) / len(collect), 4),
        "update_s_per_iter": round(sum(learn) / len(learn), 4),
        "allreduce_s_per_iter": round(allreduce["s"] / args.iterations, 4),
        "allreduce_share_of_update": round(allreduce["s"] / max(sum(learn), 1e-9), 4),
        "update_share_of_iter": round(sum(learn) / max(sum(collect) + sum(learn), 1e-9), 4),
        "train_env_steps_per_s": round(steps_per_it * args.iterations / wall, 1),
    })
    if "physics_env_steps_per_s" in result:
        result["train_over_physics"] = round(result["train_env_steps_per_s"] / result["physics_env_steps_per_s"], 3)
    result.update(_memory(device, env))
    env.close()
    return result


def _memory(device: str, env) -> dict:
    """Peak accelerator memory of this process: torch's allocator plus the physics backend's own (JAX)."""
    if not device.startswith("cuda"):
        return {}
    torch_bytes = torch.cuda.max_memory_allocated(device)
    backend_bytes = env.backend.device_memory_bytes() or 0
    total = torch_bytes + backend_bytes
    return {
        "gpu_peak_torch_gib": round(torch_bytes / 2**30, 3), "gpu_peak_backend_gib": round(backend_bytes / 2**30, 3),
        "gpu_peak_total_gib": round(total / 2**30, 3), "gpu_bytes_per_env": round(total / env.num_envs),
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
                sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
                os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "benchmark.py"),
                "--distributed", "--skip_physics", "--num_envs", str(args.num_envs),
                "--iterations", str(args.iterations), "--output", out, *overrides,
            ] + (["--device", args.device] if args.device else [])
            subprocess.run(cmd, check=True)
            with open(out) as f:
                runs[n] = json.load(f)
    base = runs[1]["train_env_steps_per_s"]
    return {
        "scaling": {
            str(n): {**r, "scaling_efficiency": round(r["train_env_steps_per_s"] / (n * base), 4)} for n, r in runs.items()
        },
        "command": " ".join(sys.argv),
    }


def main(argv: list[str] | None = None) -> int:
    args, overrides = build_parser().parse_known_args(argv)
    result = scaling(args, overrides) if args.scaling else benchmark(args, overrides)
    result.setdefault("command", " ".join(sys.argv))
    if distributed.rank() == 0:
        text = json.dumps(result, indent=2)
        print(text)
        if args.output:
            os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
            with open(args.output, "w") as f:
                f.write(text + "\n")
    distributed.shutdown()
    return 0
