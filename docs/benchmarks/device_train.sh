# Sourced by the h200_*.sh training scripts: MuJoCo Warp's site (warp_site.sh) and kernel cache, and the functions
# `train TASK NAME TAGS...` (a run from launch for TRAIN_S s; its curve of TAGS against wall time, summary, console tail,
# params and newest checkpoint in $OUT), `judge TASK NAME` (time_to_walk.py on that run's checkpoints) and
# `newest_checkpoint RUN`.
here="$(dirname "$0")"
. "$here/device_env.sh"
. "$here/warp_site.sh"
python3 -c "import mujoco_warp, warp" || { echo "MuJoCo Warp is not installed: carry the parts (warp_site.sh)"; exit 1; }
LOGS=/tmp/robolab_logs
TAG="${TAG:-}"
export WARP_CACHE_PATH="${WARP_CACHE_PATH:-/tmp/warp_cache}"
if [ -f .warpcache/warp_cache.tar.xz ] && [ ! -d "$WARP_CACHE_PATH" ]; then
  mkdir -p "$WARP_CACHE_PATH" && tar -xJf .warpcache/warp_cache.tar.xz -C "$WARP_CACHE_PATH"
fi
cache_state=$([ -n "$(ls -A "$WARP_CACHE_PATH" 2>/dev/null)" ] && echo warm || echo cold)

# newest_checkpoint RUN: the file name of RUN's highest-iteration model_<it>.pt (nothing when it has none).
newest_checkpoint() {
  ls "$1" 2>/dev/null | grep '^model_' | sort -t_ -k2 -n | tail -1
}

# train TASK NAME TAGS...: TASK from launch for TRAIN_S s; its curve (TAGS against wall time from launch) in
# $OUT/NAME_curve.json, its summary and console tail; the run's folder in $LOGS.NAME (params and the newest checkpoint
# come back in $OUT/NAME_run, for play, export and sim2sim here).
train() {
  local task=$1 name="${TAG}$2"; shift 2
  local start; start=$(date +%s.%N); echo "$start" > "$LOGS.$name.launched_at"
  # LAUNCH: what starts train.py (python3, or a torchrun line with --distributed in OVERRIDES)
  timeout -s TERM "${TRAIN_S:-300}" ${LAUNCH:-python3} scripts/train.py --task "$task" --device cuda --num_envs "${ENVS:-4096}" \
    --max_iterations 100000 --run_name "$name" --log_root "$LOGS" agent.save_interval="${SAVE:-20}" ${OVERRIDES:-} \
    > "$OUT/$name.log" 2>&1
  local run; run=$(ls -td "$LOGS"/*/*_"$name" | head -1); echo "$run" > "$LOGS.$name"
  python3 - "$run" "$start" "$cache_state" "$@" > "$OUT/${name}_curve.json" <<'PY'
import json, os, sys
sys.path.insert(0, "source")
from robolab.cli.plot import read_scalars
run, start, cache, tags = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4:]
s = read_scalars(run, start_time=start)
tags += sorted(t for t in s if t.startswith("Curriculum/terrain_level/"))
first = os.path.join(run, "model_0.pt")
print(json.dumps({"run": run, "launched_at": start, "warp_cache": cache,
                  "first_iteration_done_s": round(os.path.getmtime(first) - start, 2),
                  "curve": {t: [(it, round(w, 1), round(v, 4)) for it, w, v in s[t]] for t in tags if t in s}}))
PY
  cp "$run/summary.json" "$OUT/${name}_summary.json" 2>/dev/null
  tail -c 12000 "$OUT/$name.log" > "$OUT/$name.tail"; rm "$OUT/$name.log"
  mkdir -p "$OUT/${name}_run" && cp -r "$run/params" "$OUT/${name}_run/" \
    && cp "$run/$(newest_checkpoint "$run")" "$OUT/${name}_run/"
}

# judge TASK NAME: time_to_walk.py on the run's checkpoints in order ($OUT/NAME_time_to_walk.json).
judge() {
  timeout "${JUDGE_S:-240}" python3 scripts/time_to_walk.py --task "$1" --load_run "$(cat "$LOGS.${TAG}$2")" \
    --launched_at "$(cat "$LOGS.${TAG}$2.launched_at")" --device cuda --output "$OUT/${TAG}$2_time_to_walk.json" \
    > "$OUT/${TAG}$2_judge.log" 2>&1
}

