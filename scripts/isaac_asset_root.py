"""Write an offline Isaac Lab asset root; see robolab.cli.isaac_asset_root (needs Isaac Lab's Python)."""

import sys

from robolab.cli.isaac_asset_root import main

if __name__ == "__main__":
    sys.exit(main())
