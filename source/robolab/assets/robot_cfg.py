"""Robot description config: which model to load and how its names map onto the MDP."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RobotCfg:
    """Where the robot model comes from and what the velocity MDP needs to know about it.

    ``mjcf_path=None`` builds the Go2-class quadruped in code (``robolab.assets.go2``). Any MJCF file
    (for example a local MuJoCo Menagerie checkout's ``unitree_go2/scene.xml``) can replace it; the
    names below map its joints and bodies onto the MDP.
    """

    mjcf_path: str | None = None
    """MJCF file to load instead of the built-in robot; None builds the Go2-class robot in code."""
    base_body: str = "base"
    """Floating-base body (it must carry the model's only free joint)."""
    joint_names: list[str] = field(
        default_factory=lambda: [
            f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")
        ]
    )
    """Actuated joints in policy order."""
    foot_bodies: list[str] = field(default_factory=lambda: ["FL_foot", "FR_foot", "RL_foot", "RR_foot"])
    """Bodies whose ground contact counts as a foot contact (air-time reward, contact observations)."""
    undesired_contact_bodies: list[str] = field(
        default_factory=lambda: ["FL_thigh", "FR_thigh", "RL_thigh", "RR_thigh"]
    )
    """Bodies penalised for touching the ground."""
    termination_contact_bodies: list[str] = field(default_factory=lambda: ["base"])
    """Bodies whose ground contact ends the episode (add the thighs here to terminate on them too)."""
    default_joint_pos: list[float] = field(
        default_factory=lambda: [0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5]
    )
    """Nominal joint positions (policy order); actions are offsets from these."""
    init_base_height: float = 0.34
    """Base height at reset (m)."""
    stiffness: float = 25.0
    """PD position gain (N m / rad) used when the actuators are built or replaced by robolab."""
    damping: float = 0.5
    """PD velocity gain (N m s / rad)."""
    torque_limits: list[float] = field(default_factory=lambda: [23.7, 23.7, 45.43] * 4)
    """Actuator force limits (N m), policy order."""
    replace_actuators: bool = True
    """For a loaded MJCF: drop its actuators and add robolab's PD actuators on ``joint_names``."""
