#!/usr/bin/env bash
# RECORD, not runnable on main: it passes env.backend=mjx, the MJX backend retired in commit 8654615 (MuJoCo Warp
# replaced it: docs/benchmarks/h200_warp.sh). Kept as the exact commands behind the JSON it produced; it runs on commit 457b601.
# Sim2Sim pairs (issue 17), run on a 2-core CPU in the Isaac Lab 3.0 venv (kitless Newton) with robolab installed:
#  1. the Go2 policy trained on MJX on one H200 (h200_sim2sim_train.sh, 200 iterations) judged in MuJoCo C (its
#     task's env on the CPU) and in Isaac Lab's Newton (RoboLab-Isaac-Velocity-Flat-Go2);
#  2. the reverse: a policy trained in Isaac Lab's Newton on this CPU (RoboLab-Isaac-Velocity-Flat-Go2, 64 envs)
#     judged in Newton and in robolab's MuJoCo C env.
# 64 envs, one 20 s episode (1000 control steps), seed 0, no observation noise, no pushes, in both simulators.
#   MJX_LOGS=<log root holding go2_mjx/> ISAAC_LOGS=<log root holding isaac_go2/> bash docs/benchmarks/sim2sim_pairs.sh
set -euo pipefail
OUT="${OUT:-docs/benchmarks/sim2sim}"; mkdir -p "$OUT"
: "${ISAACSIM_ASSET_ROOT:?set it to the offline asset root (python scripts/isaac_asset_root.py --root DIR)}"
COMMON=(--num_envs 64 --device cpu --seed 0)
python scripts/sim2sim.py --log_root "$MJX_LOGS" --experiment_name go2_mjx --task RoboLab-Velocity-Flat-Go2-v0 \
  --target RoboLab-Isaac-Velocity-Flat-Go2 "${COMMON[@]}" --output "$OUT/mjx_trained_in_mujoco_and_newton.json"
python scripts/sim2sim.py --log_root "$ISAAC_LOGS" --experiment_name isaac_go2 --task RoboLab-Isaac-Velocity-Flat-Go2 \
  --target RoboLab-Velocity-Flat-Go2-v0 "${COMMON[@]}" --output "$OUT/newton_trained_in_newton_and_mujoco.json"
# 3. MuJoCo C -> MJX (JAX on the CPU here): the same MJX-trained policy, judged in MuJoCo C and in MJX.
python scripts/sim2sim.py --log_root "$MJX_LOGS" --experiment_name go2_mjx --task RoboLab-Velocity-Flat-Go2-v0 \
  --target RoboLab-Velocity-Flat-Go2-v0 "${COMMON[@]}" --output "$OUT/mujoco_c_and_mjx.json" env.backend=mjx
