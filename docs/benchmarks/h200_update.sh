#!/usr/bin/env bash
# Issue 31's PPO update on one H200, through the device tool. Results in $OUT.
#   1. tests/test_ppo_update.py, tests/test_distillation_update.py and tests/test_init_policy.py's update tests with
#      ROBOLAB_TEST_DEVICE=cuda: robolab's update against rsl_rl's with the fused and capturable optimiser kernels,
#      and a minibatch step under torch.cuda.set_sync_debug_mode("error") (tests.xml, tests.log)
#   2. scripts/benchmark.py --update at SIZES (4096 16384) envs of the Go2 flat task: robolab's update against rsl_rl's
#      on one rollout, alternately, REPEATS (10) of each (update_<envs>.json)
#   3. with BENCH=1, scripts/benchmark.py's physics, rollout and training at the same sizes (bench_<envs>.json)
# MuJoCo Warp comes as parts (warp_site.sh), the other wheels from .whl/ (device_env.sh); CACHE=1 packs warp's
# compiled kernels into $OUT/warp_cache.tar.xz for a later machine (.warpcache/, see device_train.sh).
set -uo pipefail
here="$(dirname "$0")"
. "$here/device_train.sh"  # the site, the kernel cache
TASK=RoboLab-Velocity-Flat-Go2-v0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
ROBOLAB_TEST_DEVICE=cuda timeout 400 python3 -m pytest -q -p no:cacheprovider --junitxml="$OUT/tests.xml" \
  tests/test_ppo_update.py tests/test_distillation_update.py "tests/test_init_policy.py::test_without_warm_up_the_update_is_rsl_rl_s" \
  > "$OUT/tests.log" 2>&1
tail -3 "$OUT/tests.log"
for n in ${SIZES:-4096 16384}; do
  timeout 300 python3 scripts/benchmark.py --task "$TASK" --device cuda --num_envs "$n" --update \
    --iterations "${REPEATS:-10}" --output "$OUT/update_$n.json" ${OVERRIDES:-env.backend=warp} > "$OUT/update_$n.log" 2>&1
  tail -c 2000 "$OUT/update_$n.log" > "$OUT/update_$n.tail"; rm -f "$OUT/update_$n.log"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], 'envs: robolab', r['update_ms_robolab'], 'ms, rsl_rl', r['update_ms_rsl_rl'], 'ms')" "$OUT/update_$n.json" "$n" 2>/dev/null
  if [ "${BENCH:-0}" = 1 ]; then
    timeout 300 python3 scripts/benchmark.py --task "$TASK" --device cuda --num_envs "$n" --iterations 10 \
      --output "$OUT/bench_$n.json" ${OVERRIDES:-env.backend=warp} > "$OUT/bench_$n.log" 2>&1
    tail -c 2000 "$OUT/bench_$n.log" > "$OUT/bench_$n.tail"; rm -f "$OUT/bench_$n.log"
  fi
done
if [ "${CACHE:-0}" = 1 ]; then tar -cf - -C "$WARP_CACHE_PATH" . | xz -6 -T0 > "$OUT/warp_cache.tar.xz"; fi
