#!/usr/bin/env bash
# MuJoCo Warp backend on one H200 (issue 13), through the device tool. Results in $OUT (default ./h200_out).
#   bash docs/benchmarks/h200_warp.sh check   # tests/test_gpu_backends.py with the warp backend on the GPU
#   bash docs/benchmarks/h200_warp.sh bench   # physics / rollout / training at 4096, 16384, 65536 envs
#   bash docs/benchmarks/h200_warp.sh amp     # the AMP task on the warp backend, 4096 envs
#   bash docs/benchmarks/h200_warp.sh walk    # time to walk from launch (cold warp kernel cache), judged on checkpoints
# MuJoCo Warp and warp-lang come as parts (docs/benchmarks/warp_site.sh), the other wheels from .whl/.
set -uo pipefail
here="$(dirname "$0")"
. "$here/device_env.sh"
. "$here/warp_site.sh"
python3 -c "import mujoco_warp, warp" || { echo "MuJoCo Warp is not installed: carry .wpparts/ (warp_site.sh)"; exit 1; }
LOGS=/tmp/robolab_logs

for mode in "$@"; do
case "$mode" in
check)
  ROBOLAB_TEST_DEVICE=cuda timeout 400 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_backends.py \
    > "$OUT/gpu_tests.log" 2>&1; echo "pytest rc=$?" >> "$OUT/gpu_tests.log" ;;
bench)
  for n in ${SIZES:-4096 16384 65536}; do
    for b in ${BACKENDS:-warp}; do
      timeout 200 python3 scripts/benchmark.py --device cuda --num_envs "$n" --physics_steps 100 --iterations 5 \
        env.backend="$b" --output "$OUT/${b}_1gpu_${n}envs.json" >> "$OUT/bench.log" 2>&1
    done
  done ;;
amp)
  timeout 240 python3 scripts/train.py --task RoboLab-Velocity-Flat-Go2-AMP-v0 --device cuda --num_envs 4096 \
    --max_iterations "${AMP_ITERS:-60}" --run_name amp_warp --log_root "$LOGS" > "$OUT/amp_warp.log" 2>&1
  cp "$(ls -td "$LOGS"/*/*_amp_warp | head -1)"/summary.json "$OUT/amp_warp_summary.json" ;;
walk)  # WALK_S of training, checkpoints every 10 iterations, then each judged in order. WALK_CACHE=cold: warp's
       # kernel cache starts empty, warm: as the last walk left it; WALK_ENVS envs (4096).
  export WARP_CACHE_PATH=/tmp/warp_walk_cache
  [ "${WALK_CACHE:-cold}" = cold ] && rm -rf "$WARP_CACHE_PATH"
  name=walk_warp_1gpu_${WALK_ENVS:-4096}_${WALK_CACHE:-cold}; start=$(date +%s.%N)
  timeout -s TERM "${WALK_S:-90}" python3 scripts/train.py --device cuda --num_envs "${WALK_ENVS:-4096}" --max_iterations 3000 \
    --run_name "$name" --log_root "$LOGS" agent.save_interval=10 ${WALK_OVERRIDES:-} > "$OUT/$name.log" 2>&1
  run=$(ls -td "$LOGS"/go2_flat/*_"$name" | head -1)
  WALK_CACHE=${WALK_CACHE:-cold} python3 - "$run" "$start" > "$OUT/${name}_startup.json" <<'PY'
import json, os, sys
run, start = sys.argv[1], float(sys.argv[2])
first = os.path.join(run, "model_0.pt")  # written at the end of the first iteration
print(json.dumps({"run": run, "launched_at": start, "first_iteration_done_s": round(os.path.getmtime(first) - start, 2),
                  "warp_cache": os.environ.get("WARP_CACHE_PATH", "~/.cache/warp"), "cache": os.environ["WALK_CACHE"]}))
PY
  cp "$run"/summary.json "$OUT/${name}_summary.json"
  tail -c 20000 "$OUT/$name.log" > "$OUT/$name.tail"; rm "$OUT/$name.log"  # (8 files come back at most)
  timeout 300 python3 scripts/time_to_walk.py --load_run "$run" --launched_at "$start" --device cuda \
    --output "$OUT/${name}_time_to_walk.json" > "$OUT/${name}_judge.log" 2>&1 ;;
esac
done
ls -l "$OUT"
