"""Write an offline Isaac Lab asset root; see robolab.tasks.isaaclab.assets (needs Isaac Lab's Python)."""

import sys

from robolab.tasks.isaaclab.assets import main

if __name__ == "__main__":
    sys.exit(main())
