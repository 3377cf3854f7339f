"""The Go2 velocity tasks: the built-in Go2-class robot's names and gains, its gait patterns, its env configs on flat
ground and on the generated rough terrain."""

from __future__ import annotations

from dataclasses import dataclass, field

from robolab.assets.go2 import LEGS
from robolab.assets.robot_cfg import ActuatorCfg, RobotCfg
from robolab.envs.terms import (
    CommandTermCfg,
    CurriculumTermCfg,
    EventTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from robolab.envs.velocity_env_cfg import (
    BackendCfg,
    VelocityEnvCfg,
    rough_backend,
    rough_observations,
    terrain_terminations,
    velocity_commands,
    velocity_events,
    velocity_observations,
    velocity_rewards,
    velocity_terminations,
)
from robolab.terrains.config import TerrainCfg


def go2_robot_cfg() -> RobotCfg:
    """The Go2-class quadruped built in code (``robolab.assets.go2``); Unitree's joint names and torque limits.

    Its motors are DC motors (Isaac Lab's Go2: ``DCMotorCfg``, 30 rad/s no-load speed): each joint's PD torque is
    clipped to a torque-speed line from its torque limit at rest to nothing at 30 rad/s, computed at every physics
    step (``robolab.envs.actuators``)."""
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
        actuators={"legs": ActuatorCfg(model="dc_motor", velocity_limit=30.0)},
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


def rough_rewards() -> dict[str, RewardTermCfg]:
    """The flat task's, less the level-base penalty (slopes tilt the base), with legged_gym's A1 contact penalty (-1
    per thigh or calf touching: a leg that bumps a riser is a foot not lifted over it) and an air-time reward that
    counts (0.125, Isaac Lab's rough default; its Go2 sets 0.01). Measured together with ``terrain_tile_crossed``:
    docs/benchmarks/rough_h200/train_contacts."""
    rewards = velocity_rewards()
    rewards["feet_air_time"].weight = 0.125
    del rewards["flat_orientation"]
    return rewards


def rough_terminations() -> dict[str, TerminationTermCfg]:
    """The flat task's (base height now above the ground beneath); reaching the terrain's edge, and walking half a
    tile from the start (``terrain_tile_crossed``), both time-outs (the robot walked where it was commanded; its
    value is bootstrapped). The second ends a walker's episode once it has earned its promotion, so the curriculum
    judges it every few seconds: on one H200 it lifted the mean level from 4.4 to 6.1 in 555 s
    (docs/benchmarks/rough_h200/tile_crossed_ab)."""
    return {**velocity_terminations(), **terrain_terminations()}


def rough_events() -> dict[str, EventTermCfg]:
    """No pushes (Isaac Lab's rough Go2); the start shifted up to 0.5 m within the tile's central platform, above
    the highest ground under the robot's footprint."""
    events = velocity_events()
    del events["push_robot"]
    events["reset_robot"].params.update({"position_range": 0.5, "footprint": (0.7, 0.4)})
    return events


def rough_commands() -> dict[str, CommandTermCfg]:
    """Heading commands (Isaac Lab's rough tasks): the curriculum promotes an env that walked half a tile from its
    start. Under yaw-rate commands a robot that tracks them perfectly walks circles: measured kinematically, 52 % of
    its episodes would move it up and 44 % down; under heading commands 88 % up and 11 % down (docs/terrain.md).

    Forward-biased: forward speed in [0, 1] m/s, lateral in [-0.3, 0.3]; the heading turns the robot to any way in
    the world. Under symmetric commands the Go2 learned to climb stairs backwards and sideways and never forwards
    (docs/terrain.md, "Symmetric commands"), since either way earns the curriculum's promotion."""
    commands = velocity_commands(heading_command=True)
    commands["base_velocity"].params.update({"lin_vel_x": (0.0, 1.0), "lin_vel_y": (-0.3, 0.3)})
    return commands


def go2_rough_robot_cfg() -> RobotCfg:
    """The Go2 started 0.42 m up (Isaac Lab's rough Go2 starts at 0.4): with the reset's joint-pose scaling a foot
    reaches 0.41 m below the base, and one that starts inside a height field is thrown out of it (on MuJoCo Warp,
    violently enough to diverge). Thighs and calves are the undesired contacts (legged_gym's A1)."""
    robot = go2_robot_cfg()
    robot.init_base_height = 0.42
    robot.undesired_contact_bodies = [f"{leg}_{part}" for part in ("thigh", "calf") for leg in LEGS]
    return robot


@dataclass
class Go2RoughEnvCfg(Go2FlatEnvCfg):
    """The Go2-class robot on the generated rough terrain with its curriculum; the policy sees a height scan."""

    robot: RobotCfg = field(default_factory=go2_rough_robot_cfg)
    only_positive_rewards: bool = True
    terrain: TerrainCfg | None = field(default_factory=TerrainCfg)
    backend: BackendCfg = field(default_factory=rough_backend)
    observations: dict[str, ObsGroupCfg] = field(default_factory=lambda: rough_observations(perceptive=True))
    rewards: dict[str, RewardTermCfg] = field(default_factory=rough_rewards)
    terminations: dict[str, TerminationTermCfg] = field(default_factory=rough_terminations)
    events: dict[str, EventTermCfg] = field(default_factory=rough_events)
    commands: dict[str, CommandTermCfg] = field(default_factory=rough_commands)
    curricula: dict[str, CurriculumTermCfg] = field(
        default_factory=lambda: {"terrain_level": CurriculumTermCfg(func="terrain_levels")}
    )


@dataclass
class Go2RoughBlindEnvCfg(Go2RoughEnvCfg):
    """The rough task with a proprioceptive policy (the critic and the teacher group still read the scan)."""

    observations: dict[str, ObsGroupCfg] = field(default_factory=lambda: rough_observations(perceptive=False))


def realism_events() -> dict[str, EventTermCfg]:
    """The flat task's events, plus what differs between the simulator and a Go2 (docs/sim2real.md): each motor's
    gains and strength, joint friction, damping and rotor inertia, the base's centre of mass, every link's mass,
    each foot's friction, and 0-20 ms of action latency (0 or 1 control step), with the friction and payload ranges
    widened to reach 0.3 and +4 kg."""
    events = velocity_events()
    events["physics_material"].params.update({"friction_range": (0.3, 1.25), "per_foot": True})
    events["add_base_mass"].params["mass_range"] = (-1.0, 4.0)
    startup = {
        "actuators": (
            "randomize_actuators",
            {"kp_scale": (0.7, 1.3), "kd_scale": (0.7, 1.3), "strength_scale": (0.75, 1.0)},
        ),
        "joint_dynamics": (
            "randomize_joint_dynamics",
            {"friction_range": (0.0, 0.2), "damping_range": (0.0, 0.2), "armature_scale": (0.8, 1.2)},
        ),
        "base_com": (
            "randomize_base_com",
            {"x_range": (-0.03, 0.03), "y_range": (-0.03, 0.03), "z_range": (-0.02, 0.02)},
        ),
        "link_masses": ("randomize_link_masses", {"scale_range": (0.9, 1.1)}),
    }
    for name, (func, params) in startup.items():
        events[name] = EventTermCfg(func=func, mode="startup", params=params)
    events["action_delay"] = EventTermCfg(func="randomize_action_delay", mode="reset", params={"steps_range": (0, 1)})
    return events


REALISM_PARAMS = (
    "kp_scale",
    "kd_scale",
    "strength_scale",
    "joint_friction",
    "joint_damping",
    "armature_scale",
    "base_com_offset",
    "link_mass_scale",
    "foot_friction",
    "action_delay",
)
"""What ``realism_events`` draws, for the critic."""


def realism_observations() -> dict[str, ObsGroupCfg]:
    """The flat task's groups; the critic (and a teacher) also read every value the realism events drew."""
    groups = velocity_observations()
    for group in ("critic", "teacher"):
        for name in REALISM_PARAMS:
            groups[group].terms[name] = ObsTermCfg(func="physics_param", params={"name": name})
    return groups


@dataclass
class Go2FlatRealismEnvCfg(Go2FlatEnvCfg):
    """The flat Go2 trained for a real one: ``realism_events`` and a critic that sees what they drew."""

    events: dict[str, EventTermCfg] = field(default_factory=realism_events)
    observations: dict[str, ObsGroupCfg] = field(default_factory=realism_observations)
