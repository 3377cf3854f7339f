"""Summarise training runs of robolab and Isaac Lab's trainer side by side, from their TensorBoard event files.

    python docs/benchmarks/isaaclab_compare.py --run robolab=RUN_DIR@LAUNCH_TIME --run isaaclab=RUN_DIR@LAUNCH_TIME \
        --output compare.json

Both write rsl_rl's tags (``Perf/total_fps``, ``Perf/collection_time``, ``Perf/learning_time``) and Isaac Lab's
command metric ``Metrics/base_velocity/error_vel_xy`` per iteration, each event with its wall time, and on a rough
task the curriculum's mean level (``Curriculum/terrain_levels``). For each run: iterations, the median steps/s and
iteration split after the first ``--skip`` iterations, the time from launch to the first and last iteration, and the
tracking error (and terrain level) at the last iteration both runs reached within the same wall time from launch
(the shorter run's).
"""

from __future__ import annotations

import argparse
import json
import statistics

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ERROR_TAG = "Metrics/base_velocity/error_vel_xy"
LEVEL_TAG = "Curriculum/terrain_levels"
TAGS = ("Perf/total_fps", "Perf/collection_time", "Perf/learning_time", ERROR_TAG, LEVEL_TAG)


def read(run_dir: str) -> dict[str, list]:
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in TAGS if tag in acc.Tags()["scalars"]}


def summarise(run_dir: str, launched_at: float, skip: int) -> dict:
    scalars = read(run_dir)
    fps = scalars["Perf/total_fps"]
    steady = [e for e in fps if e.step >= skip] or fps
    steps = {e.step for e in steady}

    def median(tag: str) -> float:
        return statistics.median(e.value for e in scalars[tag] if e.step in steps)

    return {
        "run_dir": run_dir,
        "iterations": len(fps),
        "steps_per_s_median": round(median("Perf/total_fps")),
        "collection_s_median": round(median("Perf/collection_time"), 4),
        "learning_s_median": round(median("Perf/learning_time"), 4),
        "first_iteration_s_from_launch": round(fps[0].wall_time - launched_at, 2),
        "last_iteration_s_from_launch": round(fps[-1].wall_time - launched_at, 2),
        "error_curve": curve(scalars.get(ERROR_TAG, []), launched_at),
        "terrain_level_curve": curve(scalars.get(LEVEL_TAG, []), launched_at),
    }


def curve(events: list, launched_at: float) -> list[tuple[int, float, float]]:
    """(iteration, seconds from launch, value) per logged iteration."""
    return [(e.step, round(e.wall_time - launched_at, 2), round(e.value, 4)) for e in events]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", action="append", required=True, help="NAME=RUN_DIR@LAUNCH_UNIX_TIME")
    p.add_argument("--skip", type=int, default=5, help="iterations left out of the medians (start-up)")
    p.add_argument(
        "--ratio",
        action="append",
        default=[],
        help="A/B: steps/s of run A over run B (any two runs; e.g. a 2-GPU run over its 1-GPU one, the scaling)",
    )
    p.add_argument("--output", required=True)
    args = p.parse_args()
    names = [spec.partition("=")[0] for spec in args.run]
    # the pairs to divide: the two runs when there are two (the comparison), and each --ratio, checked before any
    # event file is read
    pairs = [tuple(names)] if len(names) == 2 else []
    for pair in args.ratio:
        a, _, b = pair.partition("/")
        if a not in names or b not in names:
            raise SystemExit(f"--ratio {pair!r}: both names must be among the runs ({', '.join(names)})")
        pairs.append((a, b))
    runs = {}
    for spec in args.run:
        name, _, rest = spec.partition("=")
        run_dir, _, launched = rest.rpartition("@")
        runs[name] = summarise(run_dir, float(launched), args.skip)
    common = min(r["last_iteration_s_from_launch"] for r in runs.values())
    for r in runs.values():
        reached = [point for point in r["error_curve"] if point[1] <= common]
        r["error_vel_xy_at_common_wall_s"] = reached[-1][2] if reached else None
        r["iteration_at_common_wall_s"] = reached[-1][0] if reached else None
        r["error_vel_xy_final"] = r["error_curve"][-1][2] if r["error_curve"] else None
        levels = [point for point in r["terrain_level_curve"] if point[1] <= common]
        r["terrain_level_at_common_wall_s"] = levels[-1][2] if levels else None
        r["terrain_level_final"] = r["terrain_level_curve"][-1][2] if r["terrain_level_curve"] else None
    result = {"common_wall_s": common, "runs": runs}
    for a, b in pairs:
        result[f"steps_per_s_{a}_over_{b}"] = round(runs[a]["steps_per_s_median"] / runs[b]["steps_per_s_median"], 3)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
    for name, r in runs.items():
        print(name, {k: v for k, v in r.items() if not k.endswith("_curve")})


if __name__ == "__main__":
    main()
