#!/usr/bin/env bash
# RECORD, not runnable on main: it passes env.backend=mjx, the MJX backend retired in commit 8654615 (MuJoCo Warp
# replaced it: docs/benchmarks/h200_warp.sh). Kept as the exact commands behind the JSON it produced; it runs on commit 457b601.
# MJX on H200 GPUs (issue 6), as run through the device tool on a 2 x H200 machine.
#   bash docs/benchmarks/h200_mjx.sh single   # GPU 0: time to walk on one GPU; GPU 1: 4k/16k/65k-env benchmarks
#   bash docs/benchmarks/h200_mjx.sh dual     # 2-GPU scaling at 16k envs per GPU, then time to walk on two GPUs
#                                              # (12 steps per env: the one-GPU run's batch per update, collected in half the time)
# Results go to $OUT (default ./h200_out), flat and few (the device tool returns at most 8 files); run
# directories stay under /tmp/robolab_logs. Wheels that the GPU machine lacks are installed from .whl/.
# Knobs: WALK_S (training time limit), WALK_OVERRIDES (e.g. seed=7), SKIP_BENCH=1, SKIP_PLAY=1.
set -uo pipefail
OUT="${OUT:-h200_out}"; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD/source
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
LOGS=/tmp/robolab_logs

walk() {  # walk <name> <timeout_s> <train.py args...>: train from scratch, then evaluate the final policy
  local name=$1 limit=$2; shift 2
  local start; start=$(date +%s)
  timeout -s TERM "$limit" ${PIN:-} "$@" --num_envs "${ENVS_PER_GPU:-4096}" --max_iterations 3000 --run_name "$name" --log_root "$LOGS" \
    env.backend=mjx agent.save_interval=100 ${WALK_OVERRIDES:-} > "$OUT/${name}.log" 2>&1
  local run; run=$(ls -td "$LOGS"/go2_flat/*_"$name" | head -1)
  echo "{\"start_unix_s\": $start, \"run\": \"$run\"}" > "$OUT/${name}_start.json"
  cp "$run"/summary.json "$OUT/${name}_summary.json"; cp "$run"/events.out.tfevents.* "$OUT/${name}.tfevents"
  [ -n "${SKIP_PLAY:-}" ] || CUDA_VISIBLE_DEVICES=0 python3 scripts/play.py --run "$run" --num_envs 1024 --device cuda --no_export \
    env.backend=mjx > "$OUT/${name}_play.log" 2>&1
}

# The two jobs of `single` run on separate halves of the cores, so the benchmarks' compilation does not slow the
# timed training run's host thread.
cores=$(nproc); pin() { command -v taskset >/dev/null && echo "taskset -c $1"; }

case "${1:-single}" in
single)
  (export CUDA_VISIBLE_DEVICES=0 PIN=$(pin "0-$((cores / 2 - 1))"); walk walk_1gpu "${WALK_S:-300}" python3 scripts/train.py --device cuda) &
  if [ -z "${SKIP_BENCH:-}" ]; then
    (export CUDA_VISIBLE_DEVICES=1
     for n in 4096 16384 65536; do
       timeout 200 $(pin "$((cores / 2))-$((cores - 1))") python3 scripts/benchmark.py --device cuda --num_envs "$n" --physics_steps 50 --iterations 3 \
         env.backend=mjx --output "$OUT/mjx_1gpu_${n}envs.json" > /dev/null 2>&1
     done) &
  fi
  wait ;;
dual)
  [ -n "${SKIP_BENCH:-}" ] || timeout 300 python3 scripts/benchmark.py --scaling 1,2 --device cuda --num_envs 16384 \
    --iterations 3 env.backend=mjx --output "$OUT/mjx_scaling_16384envs.json" > "$OUT/scaling.log" 2>&1
  WALK_OVERRIDES="agent.num_steps_per_env=12 ${WALK_OVERRIDES:-}" walk walk_2gpu_12steps "${WALK_S:-180}" \
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 scripts/train.py --distributed ;;
dual_24)  # two GPUs, 4096 envs and 24 steps each: twice the one-GPU run's batch per update
  walk walk_2gpu 180 python3 -m torch.distributed.run --standalone --nproc_per_node=2 scripts/train.py --distributed ;;
dual_half)  # two GPUs holding the one-GPU run's 4096 envs between them (2048 each)
  ENVS_PER_GPU=2048 SKIP_PLAY=1 walk walk_2gpu_2048 150 \
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 scripts/train.py --distributed ;;
esac
ls -l "$OUT"
