"""Robot description config: which model to load and how its names map onto the MDP.

This is the generic shape; a robot's values live with its task (``robolab.tasks.velocity.go2.env_cfgs`` for the
built-in Go2-class quadruped), so a second robot is a new task folder, not an edit here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RobotCfg:
    """Where the robot model comes from and what the velocity MDP needs to know about it.

    The model is an MJCF file (``mjcf_path``, for example a local MuJoCo Menagerie checkout's
    ``unitree_go2/scene.xml``) or, without one, the ``mujoco.MjSpec`` that ``builder`` returns. The names below map
    its joints and bodies onto the MDP.
    """

    mjcf_path: str | None = None
    """MJCF file to load; it wins over ``builder``."""
    builder: str | None = None
    """``module:function`` building the model in code from this config (``robolab.assets.go2:build_go2_spec``)."""
    base_body: str = "base"
    """Floating-base body (it must carry the model's only free joint)."""
    joint_names: list[str] = field(default_factory=list)
    """Actuated joints in policy order."""
    foot_bodies: list[str] = field(default_factory=list)
    """Bodies whose ground contact counts as a foot contact (air-time reward, contact observations)."""
    undesired_contact_bodies: list[str] = field(default_factory=list)
    """Bodies penalised for touching the ground."""
    termination_contact_bodies: list[str] = field(default_factory=list)
    """Bodies whose ground contact ends the episode."""
    default_joint_pos: list[float] = field(default_factory=list)
    """Nominal joint positions (policy order); actions are offsets from these."""
    init_base_height: float = 0.3
    """Base height at reset (m)."""
    stiffness: float = 25.0
    """PD position gain (N m / rad) of every joint, used when the actuators are built or replaced by robolab."""
    damping: float = 0.5
    """PD velocity gain (N m s / rad) of every joint."""
    joint_stiffness: list[float] = field(default_factory=list)
    """Per-joint PD position gains (policy order), in place of ``stiffness``; empty: ``stiffness`` for all."""
    joint_damping: list[float] = field(default_factory=list)
    """Per-joint PD velocity gains (policy order), in place of ``damping``; empty: ``damping`` for all."""
    torque_limits: list[float] = field(default_factory=list)
    """Actuator force limits (N m), policy order."""
    replace_actuators: bool = True
    """For a loaded MJCF: drop its actuators and add robolab's PD actuators on ``joint_names``."""

    def gains(self) -> tuple[list[float], list[float]]:
        """Each joint's (stiffness, damping), policy order: the per-joint lists, or the scalars repeated."""
        count = len(self.joint_names)
        kp = list(self.joint_stiffness) if self.joint_stiffness else [self.stiffness] * count
        kd = list(self.joint_damping) if self.joint_damping else [self.damping] * count
        return [float(v) for v in kp], [float(v) for v in kd]
