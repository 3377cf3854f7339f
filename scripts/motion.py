#!/usr/bin/env python3
"""Generate, inspect and convert AMP reference clips. See ``python scripts/motion.py --help``."""

import sys

from robolab.cli.motion import main

if __name__ == "__main__":
    sys.exit(main())
