#!/usr/bin/env bash
# The declared-terms MDP (issue 24) against the MDP it replaced, measured in one invocation: the tree before
# (commit eadf0b4) and this tree, each through its own scripts/benchmark.py, alternating ROUNDS times, then the
# ratios after/before of rollout and training env steps/s (mean over rounds) in summary_<device>.json. The order
# turns each round (before-after, after-before, ...), so neither tree always runs on a GPU the other just warmed.
#   here (CPU):      bash docs/benchmarks/terms_before_after.sh
#   on a GPU:        DEVICE=cuda SIZES="4096 65536" EXTRA="env.backend=warp" BEFORE_TREE=.before bash ...
# BEFORE_TREE: a checkout of the before commit (default: a git worktree made at /tmp/robolab_before); on the device
# machine, which gets no .git, carry one made with `git archive eadf0b4 source scripts config | tar -x -C .before`.
set -euo pipefail
BEFORE=${BEFORE:-eadf0b4}
DEVICE=${DEVICE:-cpu}
SIZES=${SIZES:-1024}
ROUNDS=${ROUNDS:-2}
EXTRA=${EXTRA:-}
OUT=${OUT:-docs/benchmarks/terms_before_after}
BEFORE_TREE=${BEFORE_TREE:-/tmp/robolab_before}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
if [ ! -d "$BEFORE_TREE/source/robolab" ]; then git worktree add -f "$BEFORE_TREE" "$BEFORE" >/dev/null; fi
AFTER_TREE=$PWD
for n in $SIZES; do
  for round in $(seq "$ROUNDS"); do
    sides="before after"; [ $((round % 2)) = 0 ] && sides="after before"
    for side in $sides; do
      tree=$BEFORE_TREE; [ "$side" = after ] && tree=$AFTER_TREE
      # Each tree's own code and Hydra configs (an editable install would otherwise give both this tree's configs).
      PYTHONPATH="$tree/source${PYTHONPATH:+:$PYTHONPATH}" ROBOLAB_CONFIG_DIR="$tree/config" \
        $PY "$tree/scripts/benchmark.py" --device "$DEVICE" --num_envs "$n" --physics_steps 100 --iterations "${ITERATIONS:-5}" \
        $EXTRA --output "$OUT/${side}_${DEVICE}_${n}envs_r${round}.json" > "$OUT/.${side}_${n}_r${round}.log" 2>&1 \
        || { tail -20 "$OUT/.${side}_${n}_r${round}.log"; exit 1; }
      rm -f "$OUT/.${side}_${n}_r${round}.log"
    done
  done
done
$PY - "$OUT" "$DEVICE" "$SIZES" "$ROUNDS" <<'PY'
import json, statistics, sys
out, device, sizes, rounds = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
def pick(d, *keys):
    for k in keys:
        if k in d:
            return d[k]
        for v in d.values():
            if isinstance(v, dict) and k in v:
                return v[k]
    raise KeyError(keys)
summary = {"device": device, "rounds": rounds, "sizes": {}}
for n in sizes:
    row = {}
    for metric, keys in (("rollout_env_steps_per_s", ("rollout_env_steps_per_s",)),
                         ("train_env_steps_per_s", ("train_env_steps_per_s", "env_steps_per_s"))):
        vals = {s: [pick(json.load(open(f"{out}/{s}_{device}_{n}envs_r{r}.json")), *keys) for r in range(1, rounds + 1)]
                for s in ("before", "after")}
        row[metric] = {s: round(statistics.mean(v), 1) for s, v in vals.items()}
        row[metric]["after_over_before"] = round(statistics.mean(vals["after"]) / statistics.mean(vals["before"]), 4)
    summary["sizes"][n] = row
json.dump(summary, open(f"{out}/summary_{device}.json", "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
