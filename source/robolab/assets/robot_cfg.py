"""Robot description config: which model to load and how its names map onto the MDP.

This is the generic shape; a robot's values live with its task (``robolab.tasks.velocity.go2.env_cfgs`` for the
built-in Go2-class quadruped), so a second robot is a new task folder, not an edit here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robolab.names import matching_names

ACTUATOR_MODELS = ("ideal_pd", "dc_motor", "network")
"""Explicit actuator models (``robolab.envs.actuators``): the joint torque computed in torch at every physics step."""


@dataclass
class ActuatorCfg:
    """An explicit actuator model for the joints ``joints`` matches: the env computes their torque at every physics
    step (Isaac Lab's explicit actuators, mjlab's ``DcMotorActuatorCfg`` and ``LearnedMlpActuatorCfg``), where a
    joint no group names keeps MuJoCo's position servo (PD integrated implicitly by the solver).

    ``ideal_pd``: ``clip(kp (target - q) - kd qdot, +-limit)`` with the joint's gains and torque limit.
    ``dc_motor``: the same PD torque, clipped to the motor's torque-speed line: at most
    ``saturation_effort (1 - qdot / velocity_limit)`` in the direction of motion and at least
    ``saturation_effort (-1 - qdot / velocity_limit)``, each within the torque limit (Isaac Lab's ``DCMotor``).
    ``network``: a TorchScript MLP from ``network_path`` maps each joint's position errors and velocities at the
    physics steps ``input_idx`` back (scaled by ``pos_scale`` and ``vel_scale``, ordered by ``input_order``) to a
    torque (times ``torque_scale``), clipped to the limit (Isaac Lab's ``ActuatorNetMLP``).
    """

    model: str = "dc_motor"
    """One of ``ACTUATOR_MODELS``."""
    joints: list[str] = field(default_factory=lambda: [".*"])
    """Regular expressions over ``RobotCfg.joint_names``; each must match a joint, no joint may be in two groups."""
    saturation_effort: float | None = None
    """dc_motor: the stall torque (N m) of the torque-speed line; None: each joint's torque limit."""
    velocity_limit: float | None = None
    """dc_motor: the no-load speed (rad/s) where the line reaches zero torque; None: no line (an ideal PD)."""
    network_path: str | None = None
    """network: a TorchScript file (``torch.jit.save``) mapping (joints, inputs) to (joints, 1) torques."""
    input_idx: list[int] = field(default_factory=lambda: [0, 1, 2])
    """network: which physics steps back (0: now) of the error and velocity histories the network reads."""
    input_order: str = "pos_vel"
    """network: ``pos_vel`` (all position errors, then all velocities) or ``vel_pos``."""
    pos_scale: float = 1.0
    """An actuator network's input scale of position errors."""
    vel_scale: float = 1.0
    """An actuator network's input scale of joint velocities."""
    torque_scale: float = 1.0
    """An actuator network's output scale to newton-metres."""

    def check(self, key: str) -> None:
        """One-line errors for settings no model can run with (``key`` names the group: env.robot.actuators.<name>)."""
        if self.model not in ACTUATOR_MODELS:
            raise ValueError(f"{key}.model={self.model!r}: allowed: {', '.join(ACTUATOR_MODELS)}")
        if self.velocity_limit is not None and not self.velocity_limit > 0:
            raise ValueError(f"{key}.velocity_limit={self.velocity_limit}: must be > 0 rad/s")
        if self.saturation_effort is not None and not self.saturation_effort > 0:
            raise ValueError(f"{key}.saturation_effort={self.saturation_effort}: must be > 0 N m (or null)")
        if self.model == "network" and not self.network_path:
            raise ValueError(f"{key}.network_path: a network actuator needs a TorchScript file")
        if not self.input_idx or any(int(i) != i or i < 0 for i in self.input_idx):
            raise ValueError(f"{key}.input_idx={list(self.input_idx)}: one or more steps back, each an integer >= 0")
        if self.input_order not in ("pos_vel", "vel_pos"):
            raise ValueError(f"{key}.input_order={self.input_order!r}: allowed: pos_vel, vel_pos")


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
    actuators: dict[str, ActuatorCfg] = field(default_factory=dict)
    """Explicit actuator models by group name; joints no group names are driven by MuJoCo position servos."""

    def actuator_groups(self) -> dict[str, list[int]]:
        """The joints (policy-order indices) of each explicit actuator group, its settings checked; a joint in two
        groups is an error."""
        groups: dict[str, list[int]] = {}
        owner: dict[int, str] = {}
        for name, group in self.actuators.items():
            key = f"env.robot.actuators.{name}"
            group.check(key)
            ids = matching_names(list(self.joint_names), list(group.joints), f"{key}.joints", "the robot's joints")
            for i in ids:
                if i in owner:
                    raise ValueError(
                        f"{key}.joints: joint {self.joint_names[i]!r} is already driven by env.robot.actuators."
                        f"{owner[i]} (a joint has one actuator)"
                    )
                owner[i] = name
            groups[name] = ids
        return groups

    def gains(self) -> tuple[list[float], list[float]]:
        """Each joint's (stiffness, damping), policy order: the per-joint lists, or the scalars repeated."""
        count = len(self.joint_names)
        kp = list(self.joint_stiffness) if self.joint_stiffness else [self.stiffness] * count
        kd = list(self.joint_damping) if self.joint_damping else [self.damping] * count
        return [float(v) for v in kp], [float(v) for v in kd]
