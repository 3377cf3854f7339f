#!/usr/bin/env python3
"""Judge a trained policy in another simulator's env. See ``python scripts/sim2sim.py --help``; logic in
``robolab.cli.sim2sim`` and ``robolab.sim2sim``."""

import sys

from robolab.cli.sim2sim import main

if __name__ == "__main__":
    sys.exit(main())
