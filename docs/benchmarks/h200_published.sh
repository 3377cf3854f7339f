#!/usr/bin/env bash
# RECORD, not runnable on main: it passes env.backend=mjx, the MJX backend retired in commit 8654615 (MuJoCo Warp
# replaced it: docs/benchmarks/h200_warp.sh). Kept as the exact commands behind the JSON it produced; it runs on commit 457b601.
# Published robot models with their own solver options on the GPU backend (issue 18), as run through the device
# tool on one H200: gymnasium's Ant (RK4, 0.01 s step) trained on MJX (GPU) and on MuJoCo C (the host's CPU) with
# the same envs, seed and iterations; gymnasium's Humanoid (PGS solver) on MJX, which must be refused up front.
# The name maps are tests/test_published_models.py's. Wheels the machine lacks are installed from .whl/.
#   bash docs/benchmarks/h200_published.sh     (results in $OUT, default ./h200_out)
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
LOGS=/tmp/robolab_logs
overrides() { python3 -c "import sys; sys.path.insert(0, 'tests'); from test_published_models import robot_overrides; print(' '.join(robot_overrides('$1')))"; }
ANT=$(overrides ant); HUMANOID=$(overrides humanoid)
COMMON="--num_envs ${ENVS:-2048} --max_iterations ${ITERS:-40} --seed 3 --log_root $LOGS agent.save_interval=1000"

train() {  # train <name> <args...>: one run, its log, summary and the wall time from launch
  local name=$1; shift
  local start rc; start=$(date +%s)
  timeout 280 python3 scripts/train.py "$@" $COMMON --run_name "$name" > "$OUT/$name.log" 2>&1; rc=$?
  echo "{\"name\": \"$name\", \"rc\": $rc, \"wall_s\": $(( $(date +%s) - start ))}" > "$OUT/${name}_launch.json"
  cp "$(ls -td "$LOGS"/go2_flat/*_"$name" | head -1)"/summary.json "$OUT/${name}_summary.json" 2>/dev/null
}

train ant_mjx_gpu --device cuda env.backend=mjx $ANT
train ant_mujoco_cpu --device cpu env.backend=mujoco $ANT
# the humanoid's PGS solver: refused before any work, in one line
timeout 120 python3 scripts/train.py --device cuda env.backend=mjx $HUMANOID $COMMON --run_name humanoid_mjx \
  > "$OUT/humanoid_mjx_refused.log" 2>&1; echo "rc=$?" >> "$OUT/humanoid_mjx_refused.log"
ls -l "$OUT"
