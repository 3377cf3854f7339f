#!/usr/bin/env python3
"""Benchmark throughput (JSON). See ``python scripts/benchmark.py --help``; logic in ``robolab.cli.benchmark``."""

import sys

from robolab.cli.benchmark import main

if __name__ == "__main__":
    sys.exit(main())
