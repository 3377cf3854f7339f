"""Robot descriptions: the built-in Go2-class quadruped and the loader for any MJCF.

The loader (and MuJoCo with it) is imported on first use: the configs (``robot_cfg``) import no simulator, so a
program can still choose MuJoCo's OpenGL backend (``MUJOCO_GL``, read when MuJoCo is imported) after reading them.
"""

from robolab.assets.robot_cfg import RobotCfg

__all__ = ["RobotCfg", "RobotModel", "load_robot"]


def __getattr__(name: str):
    if name in ("RobotModel", "load_robot"):
        from robolab.assets import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'robolab.assets' has no attribute {name!r}")
