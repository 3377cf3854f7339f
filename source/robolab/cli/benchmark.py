"""``scripts/benchmark.py``: throughput of physics, rollout and training, written as JSON (``robolab.benchmarking``)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from robolab import distributed
from robolab.benchmarking import benchmark, scaling
from robolab.cli import ArgumentParser, one_line_errors, positive_int
from robolab.files import write_text_atomic
from robolab.launch import DEFAULT_TASK


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``scripts/benchmark.py``."""
    p = ArgumentParser(description="Benchmark physics, rollout and training throughput (JSON output).")
    p.add_argument("--task", default=DEFAULT_TASK)
    p.add_argument("--num_envs", type=positive_int, default=1024, help="envs per process")
    p.add_argument(
        "--physics_steps", type=positive_int, default=100, help="control steps timed for physics and rollout"
    )
    p.add_argument("--iterations", type=positive_int, default=5, help="training iterations timed (after one warm-up)")
    p.add_argument("--device", default=None)
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--scaling", default=None, help="comma-separated world sizes, e.g. 1,2: run each under torchrun")
    p.add_argument("--skip_physics", action="store_true", help="only time training iterations")
    p.add_argument(
        "--update",
        action="store_true",
        help="time robolab's PPO update against rsl_rl's on one rollout (--iterations updates of each, alternately)",
    )
    p.add_argument("--output", default=None, help="write the JSON here (default: print only)")
    return p


def run(argv: list[str] | None = None) -> None:
    """Run a benchmark (or a scaling comparison) and print and write its JSON on rank 0."""
    args, overrides = build_parser().parse_known_args(argv)
    result = scaling(args, overrides) if args.scaling else benchmark(args, overrides)
    result.setdefault("command", " ".join(sys.argv))
    if distributed.rank() == 0:
        text = json.dumps(result, indent=2)
        print(text)
        if args.output:
            write_text_atomic(os.path.abspath(args.output), text + "\n")


def main(argv: list[str] | None = None) -> int:
    """``robolab-benchmark``: the exit status, with bad input reported in one line."""
    return one_line_errors(lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
