#!/usr/bin/env bash
# Isaac Lab 3.0 kitless (Newton physics) on one H200 (issue 14), through the device tool. Results in $OUT.
#   bash docs/benchmarks/h200_isaaclab.sh warm      # compile Newton's kernels once (warp's cache), 2 iterations
#   bash docs/benchmarks/h200_isaaclab.sh compare   # robolab's train.py and `isaaclab train --rl_library rsl_rl`,
#                                                   # Isaac-Velocity-Flat-UnitreeGo2, NUM_ENVS envs, ITERS iterations
#                                                   # (ORDER="isaaclab robolab" runs Isaac Lab's first, ORDER=isaaclab
#                                                   # Isaac Lab's alone; TAG names the JSON; RUN_TIMEOUT (400) s each)
#   TASK=Isaac-Velocity-Rough-UnitreeGo2 ORDER=isaaclab TAG=_rough RUN_TIMEOUT=550 bash ... compare
#                                                   # issue 25's anchor: its curve of terrain level and tracking error
#   bash docs/benchmarks/h200_isaaclab.sh robolab   # RoboLab-Isaac-Velocity-Flat-Go2: PPO, AMP and distillation
#   bash docs/benchmarks/h200_isaaclab.sh multigpu  # issue 30, on `nvidia-h200-x2`: TASK on 1 and 2 GPUs under robolab's
#                                                   # runners (2 ranks: torchrun --distributed, replication check
#                                                   # every 5) and under `isaaclab train` / `isaaclab train_multigpu
#                                                   # --num_gpus 2`: steps/s of each and the scaling of each
#                                                   # (multigpu_<N>envs.json, NUM_ENVS per GPU; not yet run)
# Isaac Lab's stack travels as parts (docs/benchmarks/isaaclab_site.sh), the offline asset root as .ilassets/.
set -uo pipefail
here="$(dirname "$0")"
OUT="${OUT:-h200_out}"; mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
. "$here/isaaclab_site.sh"
export PYTHONPATH=/tmp/ilsite FFMPEG_BINARY=auto-detect PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE  # the GPU image sets it: each process would compile every module again (device_env.sh)
python3 -c "import isaaclab, isaaclab_tasks, newton, robolab" || { echo "Isaac Lab is not installed: carry .ilparts/"; exit 1; }
export ISAACSIM_ASSET_ROOT=/tmp/isaac_assets
# written here by `python scripts/isaac_asset_root.py --root .ilassets` (its USD converter is not in the GPU set)
[ -d "$ISAACSIM_ASSET_ROOT/Isaac" ] || cp -r .ilassets "$ISAACSIM_ASSET_ROOT"
TASK="${TASK:-Isaac-Velocity-Flat-UnitreeGo2}"; N="${NUM_ENVS:-4096}"; ITERS="${ITERS:-150}"
LOGS=/tmp/robolab_logs; IL_CWD=/tmp/isaaclab_cwd; mkdir -p "$IL_CWD"

for mode in "$@"; do
case "$mode" in
warm)
  start=$(date +%s)
  timeout 300 python3 scripts/train.py --task "$TASK" --device cuda --num_envs "$N" --max_iterations 2 \
    --log_root /tmp/warm_logs --headless > "$OUT/warm.log" 2>&1; echo "warm rc=$? $(( $(date +%s) - start )) s" | tee -a "$OUT/warm.log" ;;
compare)
  runs=()
  for fw in ${ORDER:-robolab isaaclab}; do
    start=$(date +%s.%N)
    if [ "$fw" = robolab ]; then
      timeout "${RUN_TIMEOUT:-400}" python3 scripts/train.py --task "$TASK" --device cuda --num_envs "$N" --max_iterations "$ITERS" \
        --log_root "$LOGS" --run_name cmp --headless ${OVERRIDES:-} > "$OUT/compare_robolab.log" 2>&1
      echo "robolab rc=$?" >> "$OUT/compare_robolab.log"; run=$(ls -td "$LOGS"/*/*_cmp | head -1)
    else
      (cd "$IL_CWD" && timeout "${RUN_TIMEOUT:-400}" python3 -m isaaclab train --rl_library rsl_rl --task "$TASK" --device cuda:0 \
        --num_envs "$N" --max_iterations "$ITERS" --run_name cmp > "$OUT/compare_isaaclab.log" 2>&1)
      echo "isaaclab rc=$?" >> "$OUT/compare_isaaclab.log"; run=$(ls -td "$IL_CWD"/logs/rsl_rl/*/*_cmp | head -1)
    fi
    runs+=(--run "$fw=$run@$start")
  done
  python3 "$here/isaaclab_compare.py" "${runs[@]}" --output "$OUT/compare_1gpu_${N}envs${TAG:-}.json" | tee "$OUT/compare.txt"
  for fw in robolab isaaclab; do tail -c 6000 "$OUT/compare_$fw.log" > "$OUT/compare_$fw.tail"; rm "$OUT/compare_$fw.log"; done ;;
robolab)
  common=(--task RoboLab-Isaac-Velocity-Flat-Go2 --device cuda --num_envs "$N" --log_root "$LOGS" --headless)
  timeout 120 python3 scripts/train.py "${common[@]}" --max_iterations 20 --run_name ppo > "$OUT/robolab_ppo.log" 2>&1
  echo "ppo rc=$?" >> "$OUT/robolab_ppo.log"
  teacher=$(ls -td "$LOGS"/isaac_go2_flat/*_ppo | head -1)/model_19.pt
  timeout 120 python3 scripts/train.py "${common[@]}" --max_iterations 10 --run_name amp runner=amp algorithm=ppo_amp \
    > "$OUT/robolab_amp.log" 2>&1; echo "amp rc=$?" >> "$OUT/robolab_amp.log"
  timeout 120 python3 scripts/train.py "${common[@]}" --max_iterations 10 --run_name student runner=distillation \
    algorithm=distillation --teacher_checkpoint "$teacher" > "$OUT/robolab_distillation.log" 2>&1
  echo "distillation rc=$?" >> "$OUT/robolab_distillation.log"
  python3 - "$LOGS" > "$OUT/robolab_pipelines.json" <<'PY'
import glob, json, os, sys
out = {}
for name in ("ppo", "amp", "student"):
    (run,) = sorted(glob.glob(os.path.join(sys.argv[1], "*", f"*_{name}")))[-1:]
    s = json.load(open(os.path.join(run, "summary.json")))
    out[name] = {k: s.get(k) for k in ("task", "iterations", "env_steps_per_s", "wall_s", "num_envs_per_rank", "latest_losses")}
print(json.dumps(out, indent=1))
PY
  for p in ppo amp distillation; do tail -c 3000 "$OUT/robolab_$p.log" > "$OUT/robolab_$p.tail"; rm "$OUT/robolab_$p.log"; done ;;
multigpu)
  [ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "multigpu: it needs 2 GPUs (the device kind nvidia-h200-x2)"; exit 1; }
  torchrun2=(python3 -m torch.distributed.run --standalone --nproc_per_node=2)
  runs=()
  for case in robolab_1gpu robolab_2gpu isaaclab_1gpu isaaclab_2gpu; do
    start=$(date +%s.%N); log="$OUT/multigpu_$case.log"
    case $case in
      robolab_1gpu) cmd=(python3 scripts/train.py) ;;
      robolab_2gpu) cmd=("${torchrun2[@]}" scripts/train.py --distributed --check_replication_every 5) ;;
      isaaclab_1gpu) cmd=(python3 -m isaaclab train --rl_library rsl_rl) ;;
      isaaclab_2gpu) cmd=(python3 -m isaaclab train_multigpu --num_gpus 2 --rl_library rsl_rl) ;;
    esac
    if [ "${case%%_*}" = robolab ]; then
      timeout "${RUN_TIMEOUT:-400}" "${cmd[@]}" --task "$TASK" --device cuda --num_envs "$N" --max_iterations "$ITERS" \
        --log_root "$LOGS" --run_name "$case" --headless > "$log" 2>&1
      echo "$case rc=$? $(grep -c 'replication check passed' "$log") replication checks passed"
      run=$(ls -td "$LOGS"/*/*_"$case" | head -1)
    else
      (cd "$IL_CWD" && timeout "${RUN_TIMEOUT:-400}" "${cmd[@]}" --task "$TASK" --num_envs "$N" \
        --max_iterations "$ITERS" --run_name "$case" > "$log" 2>&1)
      echo "$case rc=$?"; run=$(ls -td "$IL_CWD"/logs/rsl_rl/*/*_"$case" | head -1)
    fi
    runs+=(--run "$case=$run@$start"); tail -c 6000 "$log" > "${log%.log}.tail"; rm "$log"
  done
  python3 "$here/isaaclab_compare.py" "${runs[@]}" --ratio robolab_2gpu/robolab_1gpu \
    --ratio isaaclab_2gpu/isaaclab_1gpu --ratio robolab_2gpu/isaaclab_2gpu \
    --output "$OUT/multigpu_${N}envs${TAG:-}.json" | tee "$OUT/multigpu.txt" ;;
esac
done
