#!/usr/bin/env bash
# The rough terrain (issue 25) on one H200 with MuJoCo Warp, through the device tool. Results in $OUT.
#   bash docs/benchmarks/h200_rough.sh bench   # flat vs rough: physics, rollout and training env steps/s, GPU memory
#                                              # per env, at SIZES (4096 16384) envs
#   bash docs/benchmarks/h200_rough.sh train   # the perceptive rough task from launch for TRAIN_S s (540), 4096 envs,
#                                              # a checkpoint every 25 iterations; terrain level and tracking error
#                                              # against wall time from launch (rough_curve.json); the newest
#                                              # checkpoint and those nearest KEEP_AT_S (300) s come back in run/
#   bash docs/benchmarks/h200_rough.sh eval    # play.py --terrain_eval on the train run's checkpoints nearest EVAL_AT_S
#                                              # (300 540) s after launch (rough_eval_<s>s.json)
#   bash docs/benchmarks/h200_rough.sh distill # the blind student distilled from the train run's newest checkpoint for
#                                              # DISTILL_S s (540); its curve (student_curve.json) and the terrain
#                                              # evaluation of its last checkpoint (student_eval.json; none with
#                                              # DISTILL_EVAL=0)
#   bash docs/benchmarks/h200_rough.sh finetune # the distilled student trained on by PPO for FINETUNE_S s (270) from the
#                                              # newest distill checkpoint (or STUDENT=<checkpoint>); its curve
#                                              # (finetune_curve.json) and the evaluation of its last checkpoint
#                                              # (finetune_eval.json; none with FINETUNE_EVAL=0), and with
#                                              # STUDENT_EVAL=1 the evaluation of the student it started from
#   bash docs/benchmarks/h200_rough.sh stairs  # the rough task with its stairs on box geoms vs on the height field
#                                              # (physics, rollout, training at SIZES (4096) envs; stairs_*.json and
#                                              # stairs_summary.json with boxes / height field)
#   bash docs/benchmarks/h200_rough.sh rays    # tests/test_terrain_backends.py on the GPU (ray casts and scans on CUDA
#                                              # against MuJoCo C included) and the scan's cost by rays vs height map
#                                              # at SIZES (4096) envs (height_scan_rays.sh)
#   bash docs/benchmarks/h200_rough.sh warm    # compile MuJoCo Warp's kernels for TASK (scripts/warmup.py: 2 control
#                                              # steps at TRAIN_ENVS envs; any task, a student's too; warm.tail)
#   bash docs/benchmarks/h200_rough.sh cache   # warp's compiled kernels as $OUT/warp_cache.tar.xz, to carry to a later
#                                              # machine (WARP_CACHE_PATH; a cold cache costs ~3 minutes per launch)
# train, distill and finetune keep their log's first 4 kB (<name>.head: the kernel cache's line) and last (<name>.tail).
# TAG=<prefix> names a run and its output files (default none), so that two runs can share the GPU side by side,
# e.g. `TAG=a_ TRAIN_OVERRIDES=... bash h200_rough.sh train & TAG=b_ bash h200_rough.sh train & wait`.
# EVAL_ARGS go to play.py --terrain_eval (e.g. `--terrain_eval_friction task`, `--terrain_eval_speed 0.5`, or
# `--terrain_eval_direction 180` to judge walking backwards; EVAL_SUFFIX names the files); TEACHER= a checkpoint for
# distill; RUN_DIR= a run folder for eval (the one train returns as $OUT/<TAG>run, carried back; EVAL_TASK= the task it
# is judged on, e.g. the student's, RoboLab-Velocity-Rough-Go2-Distillation-v0).
# MuJoCo Warp comes as parts (warp_site.sh), the other wheels from .whl/ (device_env.sh).
set -uo pipefail
here="$(dirname "$0")"
. "$here/device_train.sh"  # the site, the kernel cache, LOGS and TAG
TASK="${TASK:-RoboLab-Velocity-Rough-Go2-v0}"  # or the teacher task, RoboLab-Velocity-Rough-Go2-Teacher-v0
STUDENT_TASK=RoboLab-Velocity-Rough-Go2-Distillation-v0
FINETUNE_TASK=RoboLab-Velocity-Rough-Go2-Blind-Finetune-v0

# curve RUN LAUNCHED_AT TAG...: the run's scalars against wall time from launch, and its checkpoints' times.
curve() {
  python3 - "$@" <<'PY'
import json, os, sys
sys.path.insert(0, "source")
from robolab.cli.plot import read_scalars
run, start, tags = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
s = read_scalars(run, start_time=start)
tags += sorted(t for t in s if t.startswith("Curriculum/terrain_level/"))
curve = {t: [(it, round(w, 1), round(v, 4)) for it, w, v in s[t]] for t in tags if t in s}
ckpts = sorted((int(f[6:-3]), round(os.path.getmtime(os.path.join(run, f)) - start, 1))
               for f in os.listdir(run) if f.startswith("model_"))
print(json.dumps({"run": run, "launched_at": start, "checkpoints": ckpts, "curve": curve}))
PY
}

# terrain_eval TASK RUN CHECKPOINT NAME: play.py --terrain_eval of one checkpoint into $OUT/NAME.json (+ .tail).
terrain_eval() {
  timeout 200 python3 scripts/play.py --task "$1" --device cuda --load_run "$2" --checkpoint "$3" \
    --num_envs "${EVAL_ENVS:-2000}" --terrain_eval --no_export ${EVAL_ARGS:-} > "$OUT/$4.log" 2>&1
  python3 - "$OUT/$4.log" "$3" > "$OUT/$4.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
result = json.loads(text[text.index("{\n"):])
result["checkpoint_file"] = sys.argv[2]
print(json.dumps(result, indent=1))
PY
  tail -c 3000 "$OUT/$4.log" > "$OUT/$4.tail"; rm "$OUT/$4.log"
}

# newest_before RUN LAUNCHED_AT SECONDS: the run's newest checkpoint written at most SECONDS after launch.
newest_before() {
  python3 - "$@" <<'PY'
import os, sys
run, start, at = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
done = [(os.path.getmtime(os.path.join(run, f)) - start, f) for f in os.listdir(run) if f.startswith("model_")]
print(max((t, f) for t, f in done if t <= at)[1])
PY
}

for mode in "$@"; do
case "$mode" in
bench)
  for n in ${SIZES:-4096 16384}; do
    for task in RoboLab-Velocity-Flat-Go2-v0 $TASK; do
      timeout 280 python3 scripts/benchmark.py --task "$task" --device cuda --num_envs "$n" --physics_steps 100 \
        --iterations "${ITERATIONS:-10}" env.backend=warp --output "$OUT/bench_${task}_${n}.json" >> "$OUT/bench.log" 2>&1
    done
  done
  python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
runs = {os.path.basename(p)[6:-5]: json.load(open(p)) for p in glob.glob(f"{out}/bench_*.json")}
rows = {}
for name, r in runs.items():
    task, n = name.rsplit("_", 1)
    keys = ("physics_env_steps_per_s", "rollout_env_steps_per_s", "train_env_steps_per_s", "collect_s_per_iter",
            "update_s_per_iter", "gpu_bytes_per_env", "gpu_peak_total_gib")
    rows.setdefault(n, {})[task] = {k: r.get(k) for k in keys}
for n, row in rows.items():
    flat, rough = row.get("RoboLab-Velocity-Flat-Go2-v0"), row.get("RoboLab-Velocity-Rough-Go2-v0")
    if flat and rough:
        row["rough_over_flat"] = {k: round(rough[k] / flat[k], 3) for k in flat if flat[k] and rough[k]}
json.dump(rows, open(f"{out}/bench_summary.json", "w"), indent=2)
print(json.dumps(rows, indent=2))
PY
  ;;
stairs)
  for n in ${SIZES:-4096}; do
    for g in heightfield boxes; do
      timeout 280 python3 scripts/benchmark.py --task $TASK --device cuda --num_envs "$n" --physics_steps 100 \
        --iterations "${ITERATIONS:-10}" env.backend=warp env.terrain.types.stairs_up.geometry=$g \
        env.terrain.types.stairs_down.geometry=$g --output "$OUT/stairs_${g}_${n}.json" >> "$OUT/stairs.log" 2>&1
    done
  done
  python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
keys = ("physics_env_steps_per_s", "rollout_env_steps_per_s", "train_env_steps_per_s", "gpu_bytes_per_env")
rows = {}
for path in glob.glob(f"{out}/stairs_*_*.json"):
    _, geometry, n = os.path.basename(path)[:-5].split("_")
    rows.setdefault(n, {})[geometry] = {k: json.load(open(path)).get(k) for k in keys}
for row in rows.values():
    if "boxes" in row and "heightfield" in row:
        row["boxes_over_heightfield"] = {k: round(row["boxes"][k] / row["heightfield"][k], 3) for k in keys
                                         if row["boxes"][k] and row["heightfield"][k]}
json.dump(rows, open(f"{out}/stairs_summary.json", "w"), indent=2)
print(json.dumps(rows, indent=2))
PY
  ;;
warm)
  start=$(date +%s)
  timeout 400 python3 scripts/warmup.py --task $TASK --device cuda --num_envs "${TRAIN_ENVS:-4096}" > "$OUT/warm.log" 2>&1
  echo "warm rc=$? $(( $(date +%s) - start )) s" | tee -a "$OUT/warm.log"; tail -c 3000 "$OUT/warm.log" > "$OUT/warm.tail"
  rm "$OUT/warm.log" ;;
train)
  start=$(date +%s.%N); echo "$start" > "$LOGS.${TAG}launched_at"
  timeout -s TERM "${TRAIN_S:-540}" python3 scripts/train.py --task $TASK --device cuda --num_envs "${TRAIN_ENVS:-4096}" \
    --max_iterations 100000 --run_name "${TAG}rough_h200" --log_root "$LOGS" agent.save_interval=25 \
    ${TRAIN_OVERRIDES:-} > "$OUT/${TAG}train.log" 2>&1
  run=$(ls -td "$LOGS"/*/*_"${TAG}rough_h200" | head -1); echo "$run" > "$LOGS.${TAG}run"
  curve "$run" "$start" Curriculum/terrain_level Metrics/lin_vel_tracking_error Metrics/fall_rate Train/mean_reward \
    > "$OUT/${TAG}rough_curve.json"
  head -c 4000 "$OUT/${TAG}train.log" > "$OUT/${TAG}train.head"
  tail -c 15000 "$OUT/${TAG}train.log" > "$OUT/${TAG}train.tail"; rm "$OUT/${TAG}train.log"
  cp "$run/summary.json" "$OUT/${TAG}rough_train_summary.json" 2>/dev/null
  # the params and the newest checkpoint come back too: a later call on a fresh machine evaluates or distils them
  # (carry the folder, then RUN_DIR=<it> ... eval, TEACHER=<it>/model_N.pt ... distill)
  mkdir -p "$OUT/${TAG}run" && cp -r "$run/params" "$OUT/${TAG}run/" \
    && cp "$run/$(newest_checkpoint "$run")" "$OUT/${TAG}run/"
  # and the checkpoints nearest KEEP_AT_S (300) s after launch, for the table after 5 minutes
  for at in ${KEEP_AT_S:-300}; do cp "$run/$(newest_before "$run" "$start" "$at")" "$OUT/${TAG}run/"; done ;;
eval)
  if [ -n "${RUN_DIR:-}" ]; then  # a carried run folder: its newest checkpoint
    terrain_eval "${EVAL_TASK:-$TASK}" "$(realpath "$RUN_DIR")" "$(newest_checkpoint "$RUN_DIR")" \
      "${TAG}rough_eval${EVAL_SUFFIX:-}"
    continue
  fi
  run=$(cat "$LOGS.${TAG}run"); start=$(cat "$LOGS.${TAG}launched_at")
  for at in ${EVAL_AT_S:-300 540}; do
    ckpt=$(newest_before "$run" "$start" "$at")
    terrain_eval $TASK "$run" "$ckpt" "${TAG}rough_eval_${at}s${EVAL_SUFFIX:-}"
  done ;;
distill)
  # the teacher: TEACHER=, else the newest checkpoint of this machine's train run (TASK's), else the task's default
  if [ -z "${TEACHER:-}" ] && [ -f "$LOGS.${TAG}run" ]; then
    TEACHER="$(cat "$LOGS.${TAG}run")/$(newest_checkpoint "$(cat "$LOGS.${TAG}run")")"
  fi
  start=$(date +%s.%N)
  timeout -s TERM "${DISTILL_S:-540}" python3 scripts/train.py --task $STUDENT_TASK --device cuda \
    --num_envs "${TRAIN_ENVS:-4096}" --max_iterations 100000 --run_name "${TAG}rough_h200_student" --log_root "$LOGS" \
    ${TEACHER:+--teacher_checkpoint "$TEACHER"} agent.save_interval=25 ${DISTILL_OVERRIDES:-} > "$OUT/${TAG}student.log" 2>&1
  run=$(ls -td "$LOGS"/go2_rough_distillation/*_"${TAG}rough_h200_student" | head -1)
  curve "$run" "$start" Curriculum/terrain_level Metrics/lin_vel_tracking_error Metrics/fall_rate \
    Loss/behavior > "$OUT/${TAG}student_curve.json"
  head -c 4000 "$OUT/${TAG}student.log" > "$OUT/${TAG}student.head"
  tail -c 8000 "$OUT/${TAG}student.log" > "$OUT/${TAG}student.tail"; rm "$OUT/${TAG}student.log"
  ckpt=$(newest_checkpoint "$run")
  # the student's params and newest checkpoint come back too, to be judged again later (RUN_DIR=<it> on a machine)
  mkdir -p "$OUT/${TAG}student_run" && cp -r "$run/params" "$run/$ckpt" "$OUT/${TAG}student_run/"
  # DISTILL_EVAL=0 leaves the judging to a later call (or to MuJoCo C here), so that DISTILL_S can fill a call
  [ "${DISTILL_EVAL:-1}" = 0 ] || terrain_eval $STUDENT_TASK "$run" "$ckpt" "${TAG}student_eval" ;;
finetune)
  student_run=$(ls -td "$LOGS"/go2_rough_distillation/*_"${TAG}rough_h200_student" 2>/dev/null | head -1)
  student="${STUDENT:-$student_run/$(newest_checkpoint "$student_run")}"
  [ -f "$student" ] || { echo "finetune: no student checkpoint ($student): run distill first or set STUDENT"; exit 1; }
  start=$(date +%s.%N)
  timeout -s TERM "${FINETUNE_S:-270}" python3 scripts/train.py --task $FINETUNE_TASK --device cuda \
    --num_envs "${TRAIN_ENVS:-4096}" --max_iterations 100000 --run_name "${TAG}rough_h200_finetune" --log_root "$LOGS" \
    --init_policy "$student" agent.save_interval=25 ${FINETUNE_OVERRIDES:-} > "$OUT/${TAG}finetune.log" 2>&1
  run=$(ls -td "$LOGS"/go2_rough_blind_finetune/*_"${TAG}rough_h200_finetune" | head -1)
  curve "$run" "$start" Curriculum/terrain_level Metrics/lin_vel_tracking_error Metrics/fall_rate Train/mean_reward \
    Policy/mean_std > "$OUT/${TAG}finetune_curve.json"
  head -c 4000 "$OUT/${TAG}finetune.log" > "$OUT/${TAG}finetune.head"
  tail -c 8000 "$OUT/${TAG}finetune.log" > "$OUT/${TAG}finetune.tail"; rm "$OUT/${TAG}finetune.log"
  ckpt=$(newest_checkpoint "$run")
  mkdir -p "$OUT/${TAG}finetune_run" && cp -r "$run/params" "$run/$ckpt" "$OUT/${TAG}finetune_run/"
  [ "${FINETUNE_EVAL:-1}" = 0 ] || terrain_eval $FINETUNE_TASK "$run" "$ckpt" "${TAG}finetune_eval"
  if [ "${STUDENT_EVAL:-0}" = 1 ]; then
    terrain_eval $STUDENT_TASK "$(dirname "$student")" "$(basename "$student")" "${TAG}student_eval"
  fi ;;
rays)
  ROBOLAB_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider tests/test_terrain_backends.py \
    > "$OUT/gpu_terrain_tests.log" 2>&1
  tail -3 "$OUT/gpu_terrain_tests.log"
  OUT="$OUT/rays" DEVICE=cuda EXTRA="env.backend=warp" SIZES="${SIZES:-4096}" bash "$here/height_scan_rays.sh" ;;
cache)
  tar -cf - -C "$WARP_CACHE_PATH" . | xz -6 -T0 > "$OUT/warp_cache.tar.xz"
  size=$(stat -c %s "$OUT/warp_cache.tar.xz"); echo "warp kernel cache: $size bytes"
  [ "$size" -lt 16000000 ] || { echo "over 16 MB: not returned"; rm "$OUT/warp_cache.tar.xz"; } ;;
esac
done
ls -l "$OUT"
