#!/usr/bin/env bash
# Issue 32 (sim-to-real realism) on one H200 with MuJoCo Warp, through the device tool. Results in $OUT.
#   bash docs/benchmarks/h200_realism.sh bench  # env steps/s (physics, rollout, training) at ENVS (4096) envs of the flat
#                                               # Go2 with MuJoCo's servos, with its DC motors (the task), with the
#                                               # realism task's terms, and with every realism term (an IMU bias and
#                                               # an observation delay too): bench_<name>.json, realism_cost.json
#   bash docs/benchmarks/h200_realism.sh train  # RoboLab-Velocity-Flat-Go2-v0 ("plain") and -Realism-v0 ("realism")
#                                               # side by side on the GPU for TRAIN_S (300) s, the same seed; their
#                                               # newest checkpoints come back in $OUT/{plain,realism}_run
#   bash docs/benchmarks/h200_realism.sh judge  # both runs judged in MuJoCo C (scripts/sim2sim.py) under each of the
#                                               # robustness table's perturbations: robustness_<run>_<case>.json
# The judge runs on the CPU (MuJoCo C), here or on the GPU machine: RUNS=<folder holding plain_run and realism_run, as
# `train` returns them> (default: this machine's $LOGS runs). Used here: the GPU machine's CPU judged far slower.
set -uo pipefail
here="$(dirname "$0")"
LOGS=/tmp/robolab_logs
case " $* " in *" bench "*|*" train "*) . "$here/device_train.sh" ;; *) OUT="${OUT:-h200_out}"; mkdir -p "$OUT" ;; esac

CURVE="Metrics/lin_vel_tracking_error Metrics/fall_rate Train/mean_episode_length Train/mean_reward Gait/walk_score"
# Each case's sim2sim flags; every case starts from friction 1.0 and no added mass (the target task draws them).
CASES=(
  "nominal|"
  "latency_20ms|--latency_ms 20"
  "latency_40ms|--latency_ms 40"
  "kp_0.75|--kp_scale 0.75"
  "kp_1.25|--kp_scale 1.25"
  "kd_0.5|--kd_scale 0.5"
  "strength_0.8|--strength_scale 0.8"
  "friction_0.4|--friction 0.4"
  "mass_+3kg|--added_mass 3"
  "obs_noise_x2|--obs_noise_scale 2"
  "all_at_once|--latency_ms 20 --kp_scale 0.75 --strength_scale 0.8 --friction 0.4 --added_mass 3"
)

bench_one() {  # NAME OVERRIDES...
  local name=$1; shift
  timeout 200 python3 scripts/benchmark.py --task "${BENCH_TASK:-RoboLab-Velocity-Flat-Go2-v0}" --device cuda \
    --num_envs "${ENVS:-4096}" --physics_steps "${PHYSICS_STEPS:-100}" --iterations "${ITERATIONS:-5}" env.backend=warp "$@" \
    --output "$OUT/bench_$name.json" >> "$OUT/bench.log" 2>&1
}

for mode in "$@"; do
case "$mode" in
bench)
  bench_one servos 'env.robot.actuators={}'
  bench_one dc_motor
  BENCH_TASK=RoboLab-Velocity-Flat-Go2-Realism-v0 bench_one realism_task
  BENCH_TASK=RoboLab-Velocity-Flat-Go2-Realism-v0 bench_one realism_all \
    'env.events.imu={func: randomize_imu_bias, mode: reset, params: {gyro_range: [-0.05, 0.05], tilt_range: [-0.03, 0.03]}}' \
    env.observations.policy.terms.base_ang_vel.func=imu_ang_vel \
    env.observations.policy.terms.projected_gravity.func=imu_projected_gravity \
    'env.observations.policy.delay_range=[0, 1]'
  python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
keys = ("physics_env_steps_per_s", "rollout_env_steps_per_s", "train_env_steps_per_s")
rows = {}
for name in ("servos", "dc_motor", "realism_task", "realism_all"):
    try:
        rows[name] = {k: json.load(open(f"{out}/bench_{name}.json"))[k] for k in keys}
    except (OSError, KeyError):
        rows[name] = None
base = rows["servos"]
ratios = {name: {k: round(row[k] / base[k], 3) for k in keys} for name, row in rows.items() if row and base}
json.dump({"env_steps_per_s": rows, "over_servos": ratios}, open(f"{out}/realism_cost.json", "w"), indent=2)
print(json.dumps(ratios, indent=2))
PY
  tail -c 4000 "$OUT/bench.log" > "$OUT/bench.tail"; rm -f "$OUT/bench.log" ;;
train)
  TAG= train RoboLab-Velocity-Flat-Go2-v0 plain $CURVE &
  TAG= train RoboLab-Velocity-Flat-Go2-Realism-v0 realism $CURVE &
  wait ;;
judge)
  runs="${RUNS:-}"
  for run in plain realism; do
    task=RoboLab-Velocity-Flat-Go2-v0; [ "$run" = realism ] && task=RoboLab-Velocity-Flat-Go2-Realism-v0
    dir=$([ -n "$runs" ] && echo "$runs/${run}_run" || cat "$LOGS.$run")
    for case in "${CASES[@]}"; do
      name=${case%%|*}; flags=${case#*|}
      [ -f "$OUT/robustness_${run}_${name}.json" ] && continue  # judged by an earlier call
      # shellcheck disable=SC2086
      timeout "${JUDGE_TIMEOUT:-300}" python3 scripts/sim2sim.py --task "$task" --target RoboLab-Velocity-Flat-Go2-v0 --load_run "$dir" \
        --device cpu --num_envs "${JUDGE_ENVS:-500}" --steps 1000 --seed 7 --friction 1.0 --added_mass 0 $flags \
        --output "$OUT/robustness_${run}_${name}.json" >> "$OUT/judge.log" 2>&1 || echo "judge $run $name failed" >> "$OUT/judge.log"
    done
  done
  tail -c 6000 "$OUT/judge.log" > "$OUT/judge.tail"; rm -f "$OUT/judge.log" ;;
esac
done
ls -l "$OUT"
