#!/usr/bin/env python3
"""Evaluate a trained policy and export it. See ``python scripts/play.py --help``; logic in ``robolab.cli.play``."""

import sys

from robolab.cli.play import main

if __name__ == "__main__":
    sys.exit(main())
