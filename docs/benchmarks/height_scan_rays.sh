#!/usr/bin/env bash
# The perceptive rough task's cost with its height scan read from the generated terrain's height map (the default)
# and by ray casting (method=rays: MuJoCo C's mj_multiRay, MuJoCo Warp's rays), one invocation, same machine.
#   bash docs/benchmarks/height_scan_rays.sh                 # CPU, MuJoCo C, 1024 envs
#   DEVICE=cuda EXTRA="env.backend=warp" SIZES=4096 bash docs/benchmarks/height_scan_rays.sh
# JSON per run and height_scan_rays.json (rays / height map ratios) under $OUT.
set -euo pipefail
OUT="${OUT:-height_scan_rays_out}"; mkdir -p "$OUT"
TASK=RoboLab-Velocity-Rough-Go2-v0
RAYS=""
for group in policy critic teacher; do RAYS="$RAYS env.observations.$group.terms.height_scan.params.method=rays"; done
for n in ${SIZES:-1024}; do
  for method in height_map rays; do
    overrides=""; [ "$method" = rays ] && overrides="$RAYS"
    python3 scripts/benchmark.py --task $TASK --device "${DEVICE:-cpu}" --num_envs "$n" \
      --physics_steps "${PHYSICS_STEPS:-50}" --iterations "${ITERATIONS:-2}" --output "$OUT/${method}_$n.json" \
      ${EXTRA:-} $overrides > "$OUT/${method}_$n.log" 2>&1
  done
done
python3 - "$OUT" ${SIZES:-1024} <<'PY'
import json, sys
out, sizes = sys.argv[1], sys.argv[2:]
keys = ("rollout_env_steps_per_s", "train_env_steps_per_s", "physics_env_steps_per_s")
rows = {}
for n in sizes:
    runs = {m: json.load(open(f"{out}/{m}_{n}.json")) for m in ("height_map", "rays")}
    rows[n] = {m: {k: r.get(k) for k in keys} for m, r in runs.items()}
    rows[n]["rays_over_height_map"] = {
        k: round(runs["rays"][k] / runs["height_map"][k], 3) for k in keys if runs["rays"].get(k) and runs["height_map"].get(k)
    }
json.dump(rows, open(f"{out}/height_scan_rays.json", "w"), indent=2)
print(json.dumps(rows, indent=2))
PY
