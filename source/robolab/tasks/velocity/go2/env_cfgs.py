"""The Go2 velocity tasks: the built-in Go2-class robot's names and gains, its gait patterns, its env config."""

from __future__ import annotations

from dataclasses import dataclass, field

from robolab.assets.go2 import LEGS
from robolab.assets.robot_cfg import RobotCfg
from robolab.envs.velocity_env_cfg import VelocityEnvCfg


def go2_robot_cfg() -> RobotCfg:
    """The Go2-class quadruped built in code (``robolab.assets.go2``); Unitree's joint names and torque limits."""
    return RobotCfg(
        builder="robolab.assets.go2:build_go2_spec",
        base_body="base",
        joint_names=[f"{leg}_{part}_joint" for leg in LEGS for part in ("hip", "thigh", "calf")],
        foot_bodies=[f"{leg}_foot" for leg in LEGS],
        undesired_contact_bodies=[f"{leg}_thigh" for leg in LEGS],
        termination_contact_bodies=["base"],
        default_joint_pos=[0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5],
        init_base_height=0.34,
        stiffness=25.0,
        damping=0.5,
        torque_limits=[23.7, 23.7, 45.43] * 4,
    )


def quadruped_gaits() -> dict[str, list[list[str]]]:
    """A trot moves the diagonal pairs together, a pace the lateral ones (scored per step as ``Gait/<name>_score``)."""
    return {
        "trot": [["FL_foot", "RR_foot"], ["FR_foot", "RL_foot"]],
        "pace": [["FL_foot", "RL_foot"], ["FR_foot", "RR_foot"]],
    }


@dataclass
class Go2FlatEnvCfg(VelocityEnvCfg):
    """The built-in Go2-class robot on flat ground; the MDP's defaults are tuned for it."""

    robot: RobotCfg = field(default_factory=go2_robot_cfg)
    gaits: dict[str, list[list[str]]] | None = field(default_factory=quadruped_gaits)
