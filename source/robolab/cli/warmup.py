"""``scripts/warmup.py``: compile a task's MuJoCo Warp kernels into warp's kernel cache ahead of training.

A training run on a machine whose kernel cache is empty spends its first minute or two compiling (the start-up line
says ``cold``). Run this once where the cache lives (a Docker image's build, a cluster's shared ``WARP_CACHE_PATH``)
and every later run on that GPU kind starts warm. It prints one JSON line: the cache's folder, the files it held
before and after, and the seconds it took.
"""

from __future__ import annotations

import argparse
import json
import sys

from robolab.cli import ArgumentParser, one_line_errors, positive_int
from robolab.launch import DEFAULT_TASK
from robolab.session import warm_up_kernels


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``scripts/warmup.py``."""
    p = ArgumentParser(description="Compile a task's MuJoCo Warp kernels into warp's kernel cache (JSON output).")
    p.add_argument("--task", default=DEFAULT_TASK)
    p.add_argument("--device", default=None, help="the device to compile for (default: cuda when there is one)")
    p.add_argument("--num_envs", type=positive_int, default=64, help="envs of the env that is stepped (any size)")
    p.add_argument("--steps", type=positive_int, default=2, help="control steps taken after the kernels load")
    return p


def run(argv: list[str] | None = None) -> dict:
    """Warm the cache up for one task; its report, printed as one JSON line."""
    args, overrides = build_parser().parse_known_args(argv)
    overrides = [f"env.num_envs={args.num_envs}", "env.backend=warp", *overrides]
    result = warm_up_kernels(args.task, overrides, args.device, args.steps)
    print(json.dumps(result))
    return result


def main(argv: list[str] | None = None) -> int:
    """``robolab-warmup``: the exit status, with bad input reported in one line."""
    return one_line_errors(lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
