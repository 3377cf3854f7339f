#!/usr/bin/env bash
# Issue 31's captured control step on one H200, through the device tool. Results in $OUT.
#   PART=tests: tests/test_captured_step.py (the graph's trajectory against the eager step's, a reset between steps),
#     tests/test_ppo_update.py and tests/test_distillation_update.py with ROBOLAB_TEST_DEVICE=cuda (tests.xml,
#     tests.log); then capture_probe.py on the PPO update of the Go2 flat task at 4096 envs (probe.log)
#   PART=bench: scripts/benchmark.py at SIZES (4096 16384) envs, eager, with env.cuda_graph=true, and with both
#     graphs (env and update): bench_<envs>_<eager|env_graph|both>.json
set -uo pipefail
here="$(dirname "$0")"
. "$here/device_train.sh"  # the site, the kernel cache
TASK=RoboLab-Velocity-Flat-Go2-v0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
if [ "${PART:-tests}" = tests ]; then
  ROBOLAB_TEST_DEVICE=cuda timeout "${TESTS_S:-500}" python3 -m pytest -q -s -p no:cacheprovider \
    --junitxml="$OUT/tests.xml" ${TESTS:-tests/test_captured_step.py tests/test_ppo_update.py tests/test_distillation_update.py} \
    > "$OUT/tests.log" 2>&1
  tail -5 "$OUT/tests.log"
fi
if [ "${PART:-tests}" = diag ]; then  # the failing cases of PART=tests, with the eager-eager spread (graph_diag.py)
  ROBOLAB_TEST_DEVICE=cuda timeout 250 python3 -m pytest -q -s -p no:cacheprovider tests/test_captured_step.py \
    tests/test_ppo_update.py -k "graph or reset or loaded" > "$OUT/tests.log" 2>&1
  tail -4 "$OUT/tests.log"; grep -E "^E .*(Error|differ|Mismatch)|largest" "$OUT/tests.log" | head -20
  timeout 150 python3 "$here/graph_diag.py" $TASK > "$OUT/diag.json" 2> "$OUT/diag.err"; tail -2 "$OUT/diag.err"
  MODE=global timeout 150 python3 "$here/capture_probe.py" --task "$TASK" --device cuda --num_envs 4096 --update \
    --iterations 3 --output "$OUT/probe.json" env.backend=warp agent.algorithm.cuda_graph=true > "$OUT/probe.log" 2>&1
  grep -A12 "probe:" "$OUT/probe.log" | head -30; head -c 600 "$OUT/probe.json"
fi
if [ "${PART:-tests}" = bench ]; then
  for n in ${SIZES:-4096 16384}; do
    for mode in ${MODES:-eager env_graph both}; do
      case $mode in
        eager) extra="" ;;
        env_graph) extra="env.cuda_graph=true" ;;
        both) extra="env.cuda_graph=true agent.algorithm.cuda_graph=true" ;;
      esac
      timeout 200 python3 scripts/benchmark.py --task "$TASK" --device cuda --num_envs "$n" --iterations 10 \
        --output "$OUT/bench_${n}_$mode.json" env.backend=warp $extra > "$OUT/bench_${n}_$mode.log" 2>&1
      tail -c 1500 "$OUT/bench_${n}_$mode.log" > "$OUT/bench_${n}_$mode.tail"; rm -f "$OUT/bench_${n}_$mode.log"
      python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], 'train/physics', r['train_over_physics'], 'collect', r['collect_s_per_iter'], 'update', r['update_s_per_iter'])" "$OUT/bench_${n}_$mode.json" "$n $mode" 2>/dev/null || { echo "$n $mode failed:"; tail -3 "$OUT/bench_${n}_$mode.tail"; }
    done
  done
fi
