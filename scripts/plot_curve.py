#!/usr/bin/env python3
"""Plot a run's learning curves to PNG. See ``python scripts/plot_curve.py --help``; logic in ``robolab.cli.plot``."""

import sys

from robolab.cli.plot import main

if __name__ == "__main__":
    sys.exit(main())
