"""``scripts/plot_curve.py``: learning curves of a run (tracking error, falls, reward) from its TensorBoard events."""

from __future__ import annotations

import json
import os
import sys

from robolab.cli import ArgumentParser, positive_int
from robolab.files import atomic_write

CURVES = {
    "Metrics/lin_vel_tracking_error": "lin-vel tracking error (m/s)",
    "Metrics/fall_rate": "fall rate (episodes ending in a fall)",
    "Train/mean_reward": "mean episode reward",
}


def read_scalars(run_dir: str, start_time: float | None = None) -> dict[str, list[tuple[int, float, float]]]:
    """tag -> [(iteration, wall time s, value)] from every event file of the run (resumes included).

    Wall time counts from ``start_time`` (Unix seconds, e.g. when the job was launched) or else from the
    first logged event.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["scalars"]:
        events = acc.Scalars(tag)
        t0 = start_time if start_time is not None else min(e.wall_time for e in events)
        out[tag] = [(e.step, e.wall_time - t0, e.value) for e in events]
    return out


def time_to_walk(scalars: dict, max_error: float, max_fall_rate: float, window: int) -> dict | None:
    """First iteration where the moving averages of tracking error and fall rate are both under the limits."""
    err, fall = scalars["Metrics/lin_vel_tracking_error"], scalars["Metrics/fall_rate"]
    fall_at = dict(zip((it for it, *_ in fall), smooth([v for *_, v in fall], window)))
    for (it, wall, _), e in zip(err, smooth([v for *_, v in err], window)):
        if e <= max_error and fall_at.get(it, 1.0) <= max_fall_rate:
            return {
                "iteration": it,
                "wall_s": round(wall, 1),
                "tracking_error": round(e, 4),
                "fall_rate": round(fall_at[it], 4),
                "window": window,
            }
    return None


def smooth(values: list[float], window: int) -> list[float]:
    """A trailing moving average of ``values`` over ``window`` points."""
    out, acc = [], []
    for v in values:
        acc.append(v)
        acc = acc[-window:]
        out.append(sum(acc) / len(acc))
    return out


def main(argv: list[str] | None = None) -> int:
    """``robolab-plot-curve``: draw a run's learning curve from its TensorBoard events into a PNG."""
    p = ArgumentParser(description=__doc__)
    p.add_argument("run_dir")
    p.add_argument("--output", default=None, help="PNG path (default: <run_dir>/learning_curve.png)")
    p.add_argument("--window", type=positive_int, default=10, help="moving-average window (iterations)")
    p.add_argument("--title", default=None)
    p.add_argument("--tags", nargs="*", default=list(CURVES), help="TensorBoard scalar tags to plot")
    p.add_argument("--start_time", type=float, default=None, help="Unix time the job started (default: first event)")
    p.add_argument(
        "--walk",
        nargs=2,
        type=float,
        default=(0.25, 0.05),
        metavar=("ERROR", "FALLS"),
        help="report the first time the averaged tracking error and fall rate are under these",
    )
    args = p.parse_args(argv)
    curves = {tag: CURVES.get(tag, tag) for tag in args.tags}
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("error: plotting needs matplotlib: pip install -e '.[docs]'", file=sys.stderr)
        return 2
    scalars = read_scalars(args.run_dir, args.start_time)
    missing = [tag for tag in curves if tag not in scalars]
    if missing:
        print(f"error: {args.run_dir!r} has no TensorBoard scalars {missing}", file=sys.stderr)
        return 2
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.6), squeeze=False)
    for ax, (tag, label) in zip(axes[0], curves.items()):
        wall = [t / 60 for _, t, _ in scalars[tag]]
        ax.plot(wall, [v for *_, v in scalars[tag]], alpha=0.25, color="C0")
        ax.plot(wall, smooth([v for *_, v in scalars[tag]], args.window), color="C0")
        ax.set_xlabel("wall clock (min)")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    fig.suptitle(args.title or os.path.basename(os.path.normpath(args.run_dir)))
    fig.tight_layout()
    output = args.output or os.path.join(args.run_dir, "learning_curve.png")
    atomic_write(output, lambda f: fig.savefig(f, dpi=110, format="png"))
    last = {tag: scalars[tag][-1][2] for tag in curves}
    max_error, max_fall_rate = args.walk
    walk = time_to_walk(scalars, max_error, max_fall_rate, args.window) if "Metrics/fall_rate" in scalars else None
    print(
        json.dumps(
            {
                "output": output,
                "last": last,
                "iterations": scalars[next(iter(curves))][-1][0] + 1,
                "time_to_walk": walk,
                "walk_thresholds": {"tracking_error": args.walk[0], "fall_rate": args.walk[1]},
            }
        )
    )
    return 0
