#!/usr/bin/env python3
"""Compile a task's MuJoCo Warp kernels ahead of training. See ``python scripts/warmup.py --help``; logic in
``robolab.cli.warmup``."""

import sys

from robolab.cli.warmup import main

if __name__ == "__main__":
    sys.exit(main())
