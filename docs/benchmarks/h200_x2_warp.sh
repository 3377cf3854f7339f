#!/usr/bin/env bash
# Issue 30: robolab's GPU path (MuJoCo Warp) on one node with 2 NVIDIA H200 GPUs (`nvidia-h200-x2`), through the
# device tool. Results in $OUT. Not yet run: no two-GPU machine has been lent (docs/performance.md). Each mode checks
# first that two GPUs are there, so a one-GPU machine fails in one line instead of measuring nothing.
#   bash docs/benchmarks/h200_x2_warp.sh scaling      # scripts/benchmark.py --scaling 1,2 for each of TASKS at
#                                                     # ENVS (16384) envs per GPU: training env steps/s, update and
#                                                     # all-reduce time, efficiency = steps/s(2) / (2 x steps/s(1))
#                                                     # (scaling_<task>.json; target >= 0.97)
#   bash docs/benchmarks/h200_x2_warp.sh replication  # 2 ranks, NCCL, --check_replication_every 5 for PPO, AMP and
#                                                     # distillation (the student of the PPO teacher run), 40
#                                                     # iterations each (replication_<pipeline>.{tail,json})
#   bash docs/benchmarks/h200_x2_warp.sh walk         # time to walk from launch (time_to_walk.py), warm kernel
#                                                     # cache, seed 42: 1 GPU at WALK_ENVS (8192) envs, 2 GPUs with
#                                                     # the per-GPU batch halved and kept (walk_summary.json: the
#                                                     # ratios 2 GPUs / 1 GPU; target <= 0.6)
# EXTRA= overrides go to every run of scaling and replication.
# Isaac Lab's task on 2 GPUs is `h200_isaaclab.sh multigpu`. MuJoCo Warp comes as parts (warp_site.sh), the other
# wheels from .whl/ (device_env.sh), as for h200_rough.sh.
set -uo pipefail
here="$(dirname "$0")"
. "$here/device_train.sh"  # the site, the kernel cache, LOGS, newest_checkpoint
TASKS="${TASKS:-RoboLab-Velocity-Flat-Go2-v0 RoboLab-Velocity-Rough-Go2-v0 RoboLab-Velocity-Flat-G1-v0 RoboLab-Velocity-Rough-G1-v0}"
DEVICE="${DEVICE:-cuda}"  # DEVICE=cpu: scaling and replication on 2 gloo ranks and warp's CPU device (a check)
if [ "$DEVICE" = cuda ]; then
  gpus=$(nvidia-smi -L | wc -l)
  [ "$gpus" -ge 2 ] || { echo "h200_x2_warp.sh: $gpus GPU(s) here; it needs 2 (the device kind nvidia-h200-x2)"; exit 1; }
fi
torchrun2=(python3 -m torch.distributed.run --standalone --nproc_per_node=2)

# summary RUN: the run's summary.json fields that say what ran and how fast.
summary() {
  python3 - "$1" <<'PY'
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
print(json.dumps({k: s.get(k) for k in ("task", "world_size", "num_envs_per_rank", "iterations", "env_steps_per_s",
                                         "wall_s", "latest_losses")}, indent=1))
PY
}

for mode in "$@"; do
case "$mode" in
scaling)
  for task in $TASKS; do
    timeout 500 python3 scripts/benchmark.py --scaling 1,2 --task "$task" --device "$DEVICE" --num_envs "${ENVS:-16384}" \
      --iterations "${ITERATIONS:-10}" env.backend=warp ${EXTRA:-} --output "$OUT/scaling_$task.json" > "$OUT/scaling_$task.log" 2>&1
    echo "$task rc=$?"; tail -c 3000 "$OUT/scaling_$task.log" > "$OUT/scaling_$task.tail"; rm "$OUT/scaling_$task.log"
  done ;;
replication)
  common=(--distributed --device "$DEVICE" --num_envs "${ENVS:-4096}" --max_iterations "${REPL_ITERS:-40}"
          --check_replication_every 5 --log_root "$LOGS" env.backend=warp ${EXTRA:-})
  for pipeline in ppo amp distillation; do
    case $pipeline in
      ppo) args=(--task RoboLab-Velocity-Flat-Go2-Teacher-v0 --run_name x2_ppo) ;;
      amp) args=(--task RoboLab-Velocity-Flat-Go2-AMP-v0 --run_name x2_amp) ;;
      distillation)
        teacher=$(ls -td "$LOGS"/go2_flat_teacher/*_x2_ppo | head -1)
        args=(--task RoboLab-Velocity-Flat-Go2-Distillation-v0 --run_name x2_distillation
              --teacher_checkpoint "$teacher/$(newest_checkpoint "$teacher")") ;;
    esac
    timeout 400 "${torchrun2[@]}" scripts/train.py "${common[@]}" "${args[@]}" > "$OUT/replication_$pipeline.log" 2>&1
    echo "$pipeline rc=$? $(grep -c 'replication check passed' "$OUT/replication_$pipeline.log") checks passed"
    summary "$(ls -td "$LOGS"/*/*_x2_"$pipeline" | head -1)" > "$OUT/replication_$pipeline.json"
    grep -E "^\[robolab\]" "$OUT/replication_$pipeline.log" | tail -c 6000 > "$OUT/replication_$pipeline.tail"
    rm "$OUT/replication_$pipeline.log"
  done ;;
walk)
  envs=${WALK_ENVS:-8192}
  timeout 400 python3 scripts/warmup.py --device "$DEVICE" --num_envs "$envs" > "$OUT/walk_warm.log" 2>&1
  for case in 1gpu 2gpu_halved 2gpu_kept; do  # device_train.sh's train and judge, as for one GPU
    case $case in
      1gpu) launch=python3; n=$envs; dist= ;;
      2gpu_halved) launch="${torchrun2[*]}"; n=$((envs / 2)); dist=--distributed ;;
      2gpu_kept) launch="${torchrun2[*]}"; n=$envs; dist=--distributed ;;
    esac
    LAUNCH="$launch" ENVS=$n SAVE=10 TRAIN_S="${WALK_S:-120}" \
      OVERRIDES="$dist --seed 42 ${WALK_OVERRIDES:-agent.num_steps_per_env=12}" \
      train RoboLab-Velocity-Flat-Go2-v0 "walk_$case" Metrics/lin_vel_tracking_error
    JUDGE_S="${JUDGE_S:-200}" judge RoboLab-Velocity-Flat-Go2-v0 "walk_$case"
  done
  python3 - "$OUT" <<'PY' | tee "$OUT/walk_summary.json"
import json, sys
out = sys.argv[1]
t = {c: json.load(open(f"{out}/walk_{c}_time_to_walk.json")).get("time_to_walk_s")
     for c in ("1gpu", "2gpu_halved", "2gpu_kept")}
ratio = lambda c: round(t[c] / t["1gpu"], 3) if t[c] and t["1gpu"] else None
print(json.dumps({"time_to_walk_s": t, "halved_over_1gpu": ratio("2gpu_halved"), "kept_over_1gpu": ratio("2gpu_kept")},
                 indent=1))
PY
  ;;
*) echo "h200_x2_warp.sh: mode=$mode: the modes are scaling, replication and walk"; exit 1 ;;
esac
done
ls -l "$OUT"
