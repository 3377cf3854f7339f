#!/usr/bin/env python3
"""Draw a task's generated terrain to PNG. See ``python scripts/terrain.py --help``; logic in robolab.cli.terrain."""

import sys

from robolab.cli.terrain import main

if __name__ == "__main__":
    sys.exit(main())
