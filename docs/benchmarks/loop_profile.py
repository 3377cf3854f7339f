"""Where a training iteration's time goes (issue 31), in two passes over the same run:

1. **Phases, synchronised**: the runner's and the algorithm's own methods are wrapped (for this script only; nothing
   in robolab changes) so that each waits for the GPU before and after: ``collect`` (per step ``act``, ``env_step``,
   ``storage``, ``episode_stats``; once ``returns``), ``update`` (``epochs``, ``normalizers``), ``log``, ``save``.
   Each phase's milliseconds per iteration then hold its GPU work too; the waits cost a little overlap, so the
   iteration is a little longer than unwrapped (both are reported).
2. **Kernels, profiled**: torch.profiler (CPU and CUDA) over plain iterations: the GPU's kernel time by kind
   (MuJoCo Warp's kernels, which are the physics and the height scan's rays, against torch's, which are the MDP, the
   policy and PPO), how long no kernel ran, the calls that wait for the GPU, and the top kernels and host ops.

    python docs/benchmarks/loop_profile.py --device cuda --num_envs 4096 --output profile.json \
        env.backend=warp env.cuda_graph=true agent.algorithm.cuda_graph=true
"""

import argparse
import collections
import functools
import json
import time

import torch
from torch.profiler import ProfilerActivity, profile

from robolab.session import prepare_benchmark

WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
PHASES = {  # range name: (owner's path from the runner, method)
    "collect": ("", "_collect"),
    "collect/act": ("alg", "act"),
    "collect/env_step": ("env", "step"),
    "collect/storage": ("alg", "process_env_step"),
    "collect/episode_stats": ("logger", "process_env_step"),
    "collect/returns": ("alg", "compute_returns"),
    "update": ("alg", "update"),
    "update/epochs": ("alg", "captured_epochs"),
    "update/minibatch_eager": ("alg", "minibatch_step"),
    "update/normalizers": ("alg.actor", "update_normalization"),
    "log": ("logger", "log_iteration"),
    "save": ("", "_save_iteration"),
}


def wrap_phases(runner, spent: collections.Counter, sync) -> None:
    """Each phase's method, on its instance, timed between two waits for the GPU into ``spent`` (seconds)."""
    for name, (path, method) in PHASES.items():
        owner = functools.reduce(getattr, path.split("."), runner) if path else runner
        original = getattr(owner, method, None)
        if original is None:
            continue

        def timed(*args, _original=original, _name=name, **kwargs):
            sync()
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                sync()
                spent[_name] += time.perf_counter() - start

        setattr(owner, method, timed)


def kernels(prof) -> list[tuple[float, float, str]]:
    """Every GPU kernel, copy and set of the profile: (start us, end us, name); the ranges' GPU spans left out."""
    return [
        (e.time_range.start, e.time_range.end, e.name)
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA
        and e.time_range.end > e.time_range.start
        and not e.name.startswith("ProfilerStep")
    ]


def kind(name: str) -> str:
    """MuJoCo Warp's kernels (warp names them ``..._cuda_kernel_forward``), torch's copies and sets, torch's kernels."""
    if name.endswith("_cuda_kernel_forward"):
        return "warp (physics, rays)"
    if name.startswith(("Memcpy", "Memset", "memset", "memcpy")):
        return "copies and sets"
    return "torch (MDP, policy, PPO)"


def busy_us(intervals: list[tuple[float, float, str]]) -> float:
    """Microseconds during which at least one kernel ran (overlaps counted once)."""
    total, end = 0.0, float("-inf")
    for start, stop, _ in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="RoboLab-Velocity-Flat-Go2-v0")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num_envs", type=int, default=64)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--output", required=True)
    args, overrides = parser.parse_known_args()
    _, _, runner, _, closer = prepare_benchmark(
        args.task, [f"env.num_envs={args.num_envs}", *overrides], args.device, False
    )
    cuda = args.device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    n = args.iterations
    with closer:
        runner.learn(2)  # warm-up: allocations, the optimiser's state, the graphs' captures
        sync()
        start = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU] + [ProfilerActivity.CUDA] * cuda) as prof:
            runner.learn(n)
            sync()
        profiled_us = (time.perf_counter() - start) * 1e6
        start = time.perf_counter()
        runner.learn(n)
        sync()
        plain_s = time.perf_counter() - start
        spent: collections.Counter = collections.Counter()
        wrap_phases(runner, spent, sync)
        start = time.perf_counter()
        runner.learn(n)
        phased_s = time.perf_counter() - start
    found = kernels(prof)
    by_kind: collections.Counter = collections.Counter()
    by_name: collections.Counter = collections.Counter()
    for s, e, name in found:
        by_kind[kind(name)] += e - s
        by_name[name] += e - s
    busy = busy_us(found)
    host = prof.key_averages()
    result = {
        "task": args.task,
        "num_envs": args.num_envs,
        "overrides": overrides,
        "device_name": torch.cuda.get_device_name() if cuda else "cpu",
        "iterations": n,
        "iteration_ms_plain": round(plain_s / n * 1e3, 2),
        "iteration_ms_phases_synchronised": round(phased_s / n * 1e3, 2),
        "phases_ms_per_iter": {name: round(spent[name] / n * 1e3, 2) for name in PHASES if name in spent},
        "profiled": {
            "iteration_ms_under_profiler": round(profiled_us / n / 1e3, 2),
            "gpu_busy_ms_per_iter": round(busy / n / 1e3, 2),
            "gpu_kernel_ms_per_iter_by_kind": {k: round(v / n / 1e3, 2) for k, v in by_kind.most_common()},
            "waits_for_the_gpu_per_iter": {e.key: e.count / n for e in host if e.key in WAITS},
            "kernel_launches_per_iter": sum(e.count for e in host if e.key.startswith("cudaLaunchKernel")) / n,
            "graph_launches_per_iter": sum(e.count for e in host if e.key == "cudaGraphLaunch") / n,
            "top_kernels_ms_per_iter": [[k[:120], round(v / n / 1e3, 3)] for k, v in by_name.most_common(25)],
            "top_host_ops_ms_per_iter": [
                [e.key, round(e.self_cpu_time_total / n / 1e3, 3), e.count / n]
                for e in sorted(host, key=lambda e: -e.self_cpu_time_total)[:30]
            ],
        },
    }
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k not in ("profiled", "overrides")}))
    print(json.dumps({k: v for k, v in result["profiled"].items() if not k.startswith("top_")}))


if __name__ == "__main__":
    main()
