"""Where a training iteration's host time goes, for one tree (issue 24: the declared-terms MDP against the one it
replaced). Profiles ``ITERATIONS`` training iterations after a warm-up with torch.profiler (CPU and CUDA) and writes
the ops and runtime calls by self CPU time, and the counts of the calls that wait for the GPU, as JSON.

    PYTHONPATH=<tree>/source ROBOLAB_CONFIG_DIR=<tree>/config python docs/benchmarks/terms_profile.py \
        --device cuda --num_envs 4096 --output profile.json env.backend=warp
"""

import argparse
import json
import time

from torch.profiler import ProfilerActivity, profile

from robolab.benchmarking import prepare_benchmark

WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpyAsync", "cudaMemcpy")

parser = argparse.ArgumentParser()
parser.add_argument("--task", default="RoboLab-Velocity-Flat-Go2-v0")
parser.add_argument("--device", default="cpu")
parser.add_argument("--num_envs", type=int, default=64)
parser.add_argument("--iterations", type=int, default=2)
parser.add_argument("--output", required=True)
args, overrides = parser.parse_known_args()
overrides = [f"env.num_envs={args.num_envs}", *overrides]
job, env, runner, agent, closer = prepare_benchmark(args.task, overrides, args.device, False)
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
with closer:
    runner.learn(1)
    start = time.perf_counter()
    with profile(activities=activities) as prof:
        runner.learn(args.iterations)
    wall = time.perf_counter() - start
events = prof.key_averages()
rows = sorted(events, key=lambda e: -e.self_cpu_time_total)
result = {
    "num_envs": args.num_envs,
    "iterations": args.iterations,
    "wall_s_per_iter_profiled": round(wall / args.iterations, 4),
    "waits_per_iter": {e.key: e.count / args.iterations for e in events if e.key in WAITS},
    "calls_per_iter": round(sum(e.count for e in events) / args.iterations, 1),
    "top_self_cpu_ms_per_iter": [
        [e.key, round(e.self_cpu_time_total / 1e3 / args.iterations, 3), e.count / args.iterations] for e in rows[:45]
    ],
}
with open(args.output, "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps({k: v for k, v in result.items() if k != "top_self_cpu_ms_per_iter"}))
