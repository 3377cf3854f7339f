"""``scripts/isaac_asset_root.py``: write an offline Isaac Lab asset root (``robolab.tasks.isaaclab.assets``; needs
Isaac Lab's Python)."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    """``robolab-isaac-asset-root``: write an offline Isaac Lab asset root (the Go2-class robot and ground as USD)."""
    from robolab.tasks.isaaclab.assets import write_asset_tree

    p = argparse.ArgumentParser(
        description="Write an offline Isaac Lab asset root (robolab's Go2-class robot, ground)."
    )
    p.add_argument("--root", default=os.path.join(os.path.expanduser("~"), ".cache", "robolab", "isaac_assets"))
    args = p.parse_args(argv)
    for path in write_asset_tree(args.root):
        print(path)
    print(f"export ISAACSIM_ASSET_ROOT={os.path.abspath(args.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
