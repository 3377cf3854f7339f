#!/usr/bin/env bash
# RECORD, not runnable on main: it passes env.backend=mjx, the MJX backend retired in commit 8654615 (MuJoCo Warp
# replaced it: docs/benchmarks/h200_warp.sh). Kept as the exact commands behind the JSON it produced; it runs on commit 457b601.
# Sweeps side by side on a multi-GPU node (issue 15), as run through the device tool on 2 x H200: the same 2-point
# sweep (seed=1,2; MJX physics on the GPU) one job after another (--jobs_per_node 1) and side by side (default: one
# job per GPU), with nvidia-smi sampling which GPU each job's process runs on. The compile cache is warmed first so
# both sweeps start warm. Wheels the machine lacks are installed from .whl/.
#   bash docs/benchmarks/h200_sweep.sh     (results in $OUT, default ./h200_out)
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
ARGS="--device cuda --num_envs ${ENVS:-4096} --max_iterations ${ITERS:-15} env.backend=mjx agent.save_interval=1000"
nvidia-smi --query-gpu=index,name --format=csv,noheader > "$OUT/gpus.txt"
timeout 200 python3 scripts/train.py $ARGS --max_iterations 1 --log_root /tmp/warm > "$OUT/warmup.log" 2>&1

nvidia-smi --query-compute-apps=timestamp,pid,gpu_bus_id,used_memory --format=csv,noheader -lms 500 \
  > "$OUT/gpu_apps.csv" 2>/dev/null &
SAMPLER=$!
sweep() {  # sweep <name> <flags...>
  local name=$1; shift
  local start; start=$(date +%s.%N)
  timeout 280 python3 scripts/train.py -m $ARGS --sweep_dir "/tmp/sweep_$name" "$@" seed=1,2 \
    > "/tmp/sweep_$name.log" 2>&1
  local rc=$?
  python3 - "$name" "$rc" "$start" "$(date +%s.%N)" "$OUT" <<'PY'
import glob, json, sys
name, rc, start, end, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
jobs = [json.load(open(p)) for p in sorted(glob.glob(f"/tmp/sweep_{name}/*/job_result.json"))]
table = open(f"/tmp/sweep_{name}/summary.md").read() if glob.glob(f"/tmp/sweep_{name}/summary.md") else ""
result = {"sweep": name, "rc": rc, "wall_s": round(end - start, 2), "jobs": jobs, "summary_md": table}
json.dump(result, open(f"{out}/sweep_{name}.json", "w"), indent=2)
print(json.dumps({k: v for k, v in result.items() if k != "summary_md"})[:2000])
PY
}
sweep one_after_another --jobs_per_node 1
sweep side_by_side
kill $SAMPLER
tail -5 /tmp/sweep_side_by_side.log > "$OUT/side_by_side_tail.log"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
seq, par = (json.load(open(f"{out}/sweep_{n}.json")) for n in ("one_after_another", "side_by_side"))
ratio = {"one_after_another_wall_s": seq["wall_s"], "side_by_side_wall_s": par["wall_s"],
         "speedup": round(seq["wall_s"] / par["wall_s"], 3),
         "side_by_side_devices": [j.get("cuda_visible_devices") for j in par["jobs"]]}
json.dump(ratio, open(f"{out}/sweep_ratio.json", "w"), indent=2)
print(ratio)
PY
ls -l "$OUT"
