#!/usr/bin/env python3
"""Train a locomotion policy. See ``python scripts/train.py --help``; logic lives in ``robolab.cli.train``."""

import sys

from robolab.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
