#!/usr/bin/env python3
"""Time from launch to the first saved checkpoint that walks. See ``--help``; logic in ``robolab.cli.time_to_walk``."""

import sys

from robolab.cli.time_to_walk import main

if __name__ == "__main__":
    sys.exit(main())
