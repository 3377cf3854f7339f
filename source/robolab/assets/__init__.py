"""Robot descriptions: the built-in Go2-class quadruped and the loader for any MJCF."""

from robolab.assets.loader import RobotModel, load_robot
from robolab.assets.robot_cfg import RobotCfg

__all__ = ["RobotCfg", "RobotModel", "load_robot"]
