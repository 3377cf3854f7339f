#!/usr/bin/env bash
# The G1-class humanoid (issue 26) on one H200 with MuJoCo Warp, through the device tool. Results in $OUT.
#   bash docs/benchmarks/h200_g1.sh bench   # physics, rollout and training env steps/s and GPU memory per env of the
#                                           # flat and rough G1 tasks (and the flat Go2 beside them) at SIZES (4096
#                                           # 16384) envs (bench_summary.json)
#   bash docs/benchmarks/h200_g1.sh walk    # RoboLab-Velocity-Flat-G1-v0 from launch for TRAIN_S s (300), ENVS (4096)
#                                           # envs, a checkpoint every SAVE (20) iterations, then time_to_walk.py on
#                                           # them (g1_walk_time_to_walk.json: the first that tracks within 0.25 m/s
#                                           # with at most 5 % falls over fresh 20 s episodes), its curve
#                                           # (g1_walk_curve.json)
#   bash docs/benchmarks/h200_g1.sh amp     # RoboLab-Velocity-Flat-G1-AMP-v0 the same way: the style reward and the
#                                           # walk score against wall time (g1_amp_curve.json), time_to_walk.py
#   bash docs/benchmarks/h200_g1.sh rough   # RoboLab-Velocity-Rough-G1-v0 the same way: terrain level against wall
#                                           # time (g1_rough_curve.json), play.py --terrain_eval of the last
#                                           # checkpoint (g1_rough_eval.json)
# OVERRIDES go to train.py (e.g. env.rewards.base_height.weight=-10); TAG=<prefix> names a run's files, so that two
# runs can share the GPU: `TAG=a_ bash h200_g1.sh walk & TAG=b_ ENVS=16384 bash h200_g1.sh walk; wait`.
# MuJoCo Warp comes as parts (warp_site.sh), the other wheels from .whl/ (device_env.sh); a carried
# .warpcache/warp_cache.tar.xz warms warp's kernel cache.
set -uo pipefail
here="$(dirname "$0")"
. "$here/device_train.sh"

CURVE="Metrics/lin_vel_tracking_error Metrics/fall_rate Train/mean_episode_length Train/mean_reward Gait/walk_score"
for mode in "$@"; do
case "$mode" in
bench)
  for n in ${SIZES:-4096 16384}; do
    for task in RoboLab-Velocity-Flat-G1-v0 RoboLab-Velocity-Rough-G1-v0 RoboLab-Velocity-Flat-Go2-v0; do
      timeout 200 python3 scripts/benchmark.py --task "$task" --device cuda --num_envs "$n" --physics_steps 100 \
        --iterations "${ITERATIONS:-5}" env.backend=warp --output "$OUT/bench_${task}_${n}.json" >> "$OUT/bench.log" 2>&1
    done
  done
  python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
keys = ("physics_env_steps_per_s", "rollout_env_steps_per_s", "train_env_steps_per_s", "gpu_bytes_per_env")
rows = {}
for path in glob.glob(f"{out}/bench_*.json"):
    task, n = os.path.basename(path)[6:-5].rsplit("_", 1)
    rows.setdefault(n, {})[task] = {k: json.load(open(path)).get(k) for k in keys}
json.dump(rows, open(f"{out}/bench_summary.json", "w"), indent=2)
print(json.dumps(rows, indent=2))
PY
  tail -c 4000 "$OUT/bench.log" > "$OUT/bench.tail"; rm "$OUT/bench.log" ;;
walk)
  train RoboLab-Velocity-Flat-G1-v0 g1_walk $CURVE Episode_Reward/feet_air_time
  judge RoboLab-Velocity-Flat-G1-v0 g1_walk ;;
amp)
  train RoboLab-Velocity-Flat-G1-AMP-v0 g1_amp $CURVE AMP/style_reward
  judge RoboLab-Velocity-Flat-G1-AMP-v0 g1_amp ;;
rough)
  train RoboLab-Velocity-Rough-G1-v0 g1_rough $CURVE Curriculum/terrain_level
  run=$(cat "$LOGS.${TAG}g1_rough")
  timeout "${JUDGE_S:-240}" python3 scripts/play.py --task RoboLab-Velocity-Rough-G1-v0 --device cuda --load_run "$run" \
    --num_envs 2000 --terrain_eval --no_export > "$OUT/${TAG}g1_rough_eval.log" 2>&1
  python3 - "$OUT/${TAG}g1_rough_eval.log" > "$OUT/${TAG}g1_rough_eval.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
print(json.dumps(json.loads(text[text.index("{\n"):]), indent=1))
PY
  tail -c 3000 "$OUT/${TAG}g1_rough_eval.log" > "$OUT/${TAG}g1_rough_eval.tail"; rm "$OUT/${TAG}g1_rough_eval.log" ;;
esac
done
ls -l "$OUT"
