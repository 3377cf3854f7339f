#!/usr/bin/env bash
# RECORD, not runnable on main: it passes env.backend=mjx, the MJX backend retired in commit 8654615 (MuJoCo Warp
# replaced it: docs/benchmarks/h200_warp.sh). Kept as the exact commands behind the JSON it produced; it runs on commit 457b601.
# Sim2Sim source policy (issue 17): the Go2 task trained on MJX on one H200 (4096 envs, ITERS iterations, seed 1);
# the run's checkpoint and params come back for scripts/sim2sim.py to judge in MuJoCo C and Isaac Lab's Newton.
#   bash docs/benchmarks/h200_sim2sim_train.sh     (results in $OUT, default ./h200_out)
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
mkdir -p "$OUT/run/params"
ITERS="${ITERS:-200}"
timeout 500 python3 scripts/train.py --device cuda --num_envs 4096 --max_iterations "$ITERS" --seed 1 \
  env.backend=mjx --log_root /tmp/logs --experiment_name go2_mjx --run_name h200 agent.save_interval=50 \
  > "$OUT/train.log" 2>&1
echo "train rc=$?"
RUN=$(ls -td /tmp/logs/go2_mjx/*_h200 | head -1)
cp "$RUN/model_$((ITERS - 1)).pt" "$RUN/summary.json" "$OUT/run/"
cp "$RUN/params/env.yaml" "$RUN/params/agent.yaml" "$OUT/run/params/"
tail -c 1500 "$OUT/train.log"
