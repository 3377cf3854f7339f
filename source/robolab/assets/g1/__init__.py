"""A G1-class humanoid (Unitree G1, 29 actuated joints) built in code with ``mujoco.MjSpec``; where each number
comes from is in ``SOURCES.md`` beside this file."""

from robolab.assets.g1.model import ARM_JOINTS, JOINTS, LEG_JOINTS, MOTORS, WAIST_JOINTS, build_g1_spec

__all__ = ["ARM_JOINTS", "JOINTS", "LEG_JOINTS", "MOTORS", "WAIST_JOINTS", "build_g1_spec"]
