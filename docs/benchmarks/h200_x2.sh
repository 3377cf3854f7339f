#!/usr/bin/env bash
# Distributed training and scaling on one node with 2 NVIDIA H200 GPUs (the device machine `nvidia-h200-x2`:
# 32 CPU cores, Python 3.12, torch 2.11). Run from the repository root; results go to $OUT (default ./out).
# robolab's own dependencies that the image lacks travel as wheels in .whl/ (see docs/benchmarks/README.md).
set -euo pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$PWD/source"
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
nvidia-smi -L; nproc; python3 -c 'import torch, mujoco; print(torch.__version__, mujoco.__version__)'

# The embedded task keeps its physics on the CPU: give every rank the same 16 cores (one GPU's share).
THREADS=env.backend.num_threads=16

# 1. Two ranks, NCCL, replication check every 5 iterations.
torchrun --standalone --nproc_per_node=2 scripts/train.py --distributed --headless --device cuda \
  --num_envs 4096 --max_iterations 40 --check_replication_every 5 --log_root /tmp/logs $THREADS \
  > "$OUT/train_2gpu.log" 2>&1 || { tail -50 "$OUT/train_2gpu.log"; exit 1; }
grep -E "^\[robolab\]" "$OUT/train_2gpu.log"
cp /tmp/logs/go2_flat/*/summary.json "$OUT/train_2gpu_summary.json"

# 2. Scaling: the same per-rank work at 1 and 2 ranks, in one invocation.
python3 scripts/benchmark.py --scaling 1,2 --num_envs 4096 --iterations 10 --device cuda $THREADS \
  --output "$OUT/scaling_h200_x2.json" > "$OUT/scaling.log" 2>&1 || { tail -50 "$OUT/scaling.log"; exit 1; }

# 3. One GPU: physics alone, rollout with the policy, full iterations.
python3 scripts/benchmark.py --num_envs 4096 --iterations 10 --device cuda $THREADS \
  --output "$OUT/single_h200.json" > "$OUT/single.log" 2>&1 || { tail -50 "$OUT/single.log"; exit 1; }
cat "$OUT/scaling_h200_x2.json" "$OUT/single_h200.json"
