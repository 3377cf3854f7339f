"""The G1 velocity tasks: the built-in G1-class humanoid's names, pose and gains, the terms a biped needs, its env
configs on flat ground and on the generated rough terrain.

The MDP is Isaac Lab's G1 velocity task (``Isaac-Velocity-Flat-G1-v0`` / ``-Rough-``): the same observations,
its rewards and weights (a biped air-time reward, feet slide, the arms, waist and hip yaw/roll held near home, ankle
limits, a fall penalty), its commands and its torso-contact termination. Where robolab differs it says why below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypeVar

from robolab.assets.g1 import JOINTS
from robolab.assets.g1.model import motor
from robolab.assets.robot_cfg import RobotCfg
from robolab.envs.terms import (
    CommandTermCfg,
    CurriculumTermCfg,
    EventTermCfg,
    ObsGroupCfg,
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
)
from robolab.terrains.config import TerrainCfg

T = TypeVar("T")
LEG_TORQUE_JOINTS = [".*_hip_.*_joint", ".*_knee_joint", ".*_ankle_.*_joint"]
LEG_ACC_JOINTS = [".*_hip_.*_joint", ".*_knee_joint"]
FEET = ["left_ankle_roll_link", "right_ankle_roll_link"]
HOME_POSE = {
    ".*_hip_pitch_joint": -0.312,
    ".*_knee_joint": 0.669,
    ".*_ankle_pitch_joint": -0.363,
    ".*_shoulder_pitch_joint": 0.2,
    "left_shoulder_roll_joint": 0.2,
    "right_shoulder_roll_joint": -0.2,
    ".*_elbow_joint": 0.6,
}
"""Knees bent, arms at the sides (mjlab's G1 keyframe for this model revision); other joints at 0."""
GAINS = {
    # (stiffness N m/rad, damping N m s/rad): Isaac Lab's G1 (its waist has the legs' gains, its wrists the arms'),
    # but the ankles at Unitree's own 40 (unitree_rl_gym's G1) for Isaac Lab's 20: no ankle gain holds the robot up
    # by itself (that takes over 110 N m/rad per ankle), but 40 gives a policy twice the ankle torque per action.
    ".*_hip_(yaw|roll)_joint": (150.0, 5.0),
    ".*_(hip_pitch|knee)_joint": (200.0, 5.0),
    "waist_.*_joint": (200.0, 5.0),
    ".*_ankle_.*_joint": (40.0, 2.0),
    ".*_(shoulder|elbow|wrist)_.*joint": (40.0, 10.0),
}


def _by_pattern(table: dict[str, T], joint: str, default: T | None = None) -> T:
    """The value of the first pattern of ``table`` that ``joint`` fully matches, else ``default`` (None: an error)."""
    for pattern, value in table.items():
        if re.fullmatch(pattern, joint):
            return value
    if default is None:
        raise KeyError(f"{joint!r} matches none of {list(table)}")
    return default


def g1_robot_cfg() -> RobotCfg:
    """The G1-class humanoid built in code (``robolab.assets.g1``), all 29 joints actuated; torque limits are its
    motors' (``MOTORS``)."""
    gains = [_by_pattern(GAINS, joint) for joint in JOINTS]
    return RobotCfg(
        builder="robolab.assets.g1:build_g1_spec",
        base_body="pelvis",
        joint_names=list(JOINTS),
        foot_bodies=list(FEET),
        # A shin or thigh on the ground is a knee down (a stumble); pelvis or torso down is a fall.
        undesired_contact_bodies=[
            f"{side}_{part}" for part in ("hip_yaw_link", "knee_link") for side in ("left", "right")
        ],
        termination_contact_bodies=["pelvis", "torso_link"],
        default_joint_pos=[_by_pattern(HOME_POSE, joint, 0.0) for joint in JOINTS],
        init_base_height=0.76,  # the soles 3 mm above the floor in the home pose
        joint_stiffness=[kp for kp, _ in gains],
        joint_damping=[kd for _, kd in gains],
        torque_limits=[motor(joint).effort for joint in JOINTS],
    )


def biped_gaits() -> dict[str, list[list[str]]]:
    """A walk: the feet in opposite contact states (one down, one up)."""
    return {"walk": [[FEET[0]], [FEET[1]]]}


def g1_rewards() -> dict[str, RewardTermCfg]:
    """Isaac Lab's G1 flat rewards. Weights are multiplied by the control dt."""
    return {
        "track_lin_vel_xy": RewardTermCfg(func="track_lin_vel_xy_exp", weight=1.0, params={"std": 0.5}),
        "track_ang_vel_z": RewardTermCfg(func="track_ang_vel_z_exp", weight=1.0, params={"std": 0.5}),
        "termination": RewardTermCfg(func="is_terminated", weight=-200.0),
        "lin_vel_z": RewardTermCfg(func="lin_vel_z_l2", weight=-0.2),
        "ang_vel_xy": RewardTermCfg(func="ang_vel_xy_l2", weight=-0.05),
        "flat_orientation": RewardTermCfg(func="flat_orientation_l2", weight=-1.0),
        # Off, as in Isaac Lab's G1 (the tracking and fall terms keep the pelvis up); declared so a run can set it.
        "base_height": RewardTermCfg(func="base_height_l2", weight=0.0, params={"target_height": 0.74}),
        # Legs only, as Isaac Lab's G1: an untrained policy's noise swings the light arm links hardest, and priced
        # there the cost of living outweighed the fall penalty (the rough G1 learned to fall at once, docs/humanoid.md).
        "joint_torques": RewardTermCfg(func="joint_torques_l2", weight=-2.0e-6, params={"joints": LEG_TORQUE_JOINTS}),
        "joint_acc": RewardTermCfg(func="joint_acc_l2", weight=-1.0e-7, params={"joints": LEG_ACC_JOINTS}),
        "action_rate": RewardTermCfg(func="action_rate_l2", weight=-0.005),
        "feet_air_time": RewardTermCfg(func="feet_air_time_biped", weight=0.75, params={"threshold": 0.4}),
        "feet_slide": RewardTermCfg(func="feet_slide", weight=-0.1),
        "ankle_limits": RewardTermCfg(func="joint_pos_limits", weight=-1.0, params={"joints": [".*_ankle_.*_joint"]}),
        "hip_deviation": RewardTermCfg(
            func="joint_deviation_l1", weight=-0.1, params={"joints": [".*_hip_yaw_joint", ".*_hip_roll_joint"]}
        ),
        "arm_deviation": RewardTermCfg(
            func="joint_deviation_l1",
            weight=-0.1,
            params={"joints": [".*_shoulder_.*_joint", ".*_elbow_joint", ".*_wrist_.*_joint"]},
        ),
        "waist_deviation": RewardTermCfg(func="joint_deviation_l1", weight=-0.1, params={"joints": ["waist_.*_joint"]}),
        "undesired_contacts": RewardTermCfg(func="undesired_contacts", weight=-1.0, params={"threshold": 1.0}),
    }


def g1_terminations() -> dict[str, TerminationTermCfg]:
    """Time-out; pelvis or torso on the ground, or the pelvis below 0.35 m (it stands at 0.76 m): a fall."""
    return {
        "time_out": TerminationTermCfg(func="time_out", time_out=True),
        "base_contact": TerminationTermCfg(func="illegal_contact", params={"threshold": 1.0}),
        "base_height": TerminationTermCfg(func="base_height_below", params={"min_height": 0.35}),
    }


def g1_events() -> dict[str, EventTermCfg]:
    """The velocity task's friction and base mass randomisation; a random yaw each episode from the home pose at
    rest (Isaac Lab's G1 scales no joint and starts still: a humanoid whose legs start at half their bend, or moving,
    mostly falls before the policy can act); pushes every 10-15 s."""
    events = velocity_events()
    events["reset_robot"].params.update({"joint_pos_scale": (1.0, 1.0), "base_velocity": 0.0})
    return events


def g1_commands() -> dict[str, CommandTermCfg]:
    """Isaac Lab's G1 flat ranges: forward 0..1 m/s, lateral +-0.5 m/s, yaw rate +-1 rad/s."""
    commands = velocity_commands()
    commands["base_velocity"].params.update({"lin_vel_x": (0.0, 1.0), "lin_vel_y": (-0.5, 0.5)})
    return commands


@dataclass
class G1FlatEnvCfg(VelocityEnvCfg):
    """The built-in G1-class humanoid on flat ground."""

    robot: RobotCfg = field(default_factory=g1_robot_cfg)
    action_scale: float = 0.5
    gaits: dict[str, list[list[str]]] | None = field(default_factory=biped_gaits)
    observations: dict[str, ObsGroupCfg] = field(default_factory=velocity_observations)
    rewards: dict[str, RewardTermCfg] = field(default_factory=g1_rewards)
    terminations: dict[str, TerminationTermCfg] = field(default_factory=g1_terminations)
    events: dict[str, EventTermCfg] = field(default_factory=g1_events)
    commands: dict[str, CommandTermCfg] = field(default_factory=g1_commands)


def g1_rough_rewards() -> dict[str, RewardTermCfg]:
    """Isaac Lab's G1 rough weights: tracking the yaw rate pays twice the flat task's, the air time a third, no
    vertical-velocity penalty (stairs move the pelvis up and down). The level-pelvis penalty stays, as in Isaac
    Lab's: without it the G1 did not learn to stay up in 380 s on one H200 (docs/humanoid.md)."""
    rewards = g1_rewards()
    rewards["track_ang_vel_z"].weight = 2.0
    rewards["feet_air_time"].weight = 0.25
    rewards["joint_torques"].weight = -1.5e-7
    rewards["joint_acc"].weight = -1.25e-7
    del rewards["lin_vel_z"]
    return rewards


def g1_rough_events() -> dict[str, EventTermCfg]:
    """No pushes (Isaac Lab's rough G1); the start shifted up to 0.5 m within the tile's central platform, above
    the highest ground under the feet."""
    events = g1_events()
    del events["push_robot"]
    events["reset_robot"].params.update({"position_range": 0.5, "footprint": (0.35, 0.35)})
    return events


def g1_rough_commands() -> dict[str, CommandTermCfg]:
    """Heading commands, forward only (Isaac Lab's rough G1: forward 0..1 m/s, no lateral speed); the heading turns
    the robot to face any way in the world. Why heading commands on rough terrain: the Go2's ``rough_commands``."""
    commands = velocity_commands(heading_command=True)
    commands["base_velocity"].params.update({"lin_vel_x": (0.0, 1.0), "lin_vel_y": (0.0, 0.0)})
    return commands


def g1_rough_robot_cfg() -> RobotCfg:
    """Started 2 cm higher than on flat ground (above the highest ground under its feet)."""
    robot = g1_robot_cfg()
    robot.init_base_height = 0.78
    return robot


@dataclass
class G1RoughEnvCfg(G1FlatEnvCfg):
    """The G1-class humanoid on the generated rough terrain with its curriculum; the policy sees a height scan."""

    robot: RobotCfg = field(default_factory=g1_rough_robot_cfg)
    terrain: TerrainCfg | None = field(default_factory=TerrainCfg)
    backend: BackendCfg = field(default_factory=rough_backend)
    observations: dict[str, ObsGroupCfg] = field(default_factory=lambda: rough_observations(perceptive=True))
    rewards: dict[str, RewardTermCfg] = field(default_factory=g1_rough_rewards)
    terminations: dict[str, TerminationTermCfg] = field(
        default_factory=lambda: {**g1_terminations(), **terrain_terminations()}
    )
    events: dict[str, EventTermCfg] = field(default_factory=g1_rough_events)
    commands: dict[str, CommandTermCfg] = field(default_factory=g1_rough_commands)
    curricula: dict[str, CurriculumTermCfg] = field(
        default_factory=lambda: {"terrain_level": CurriculumTermCfg(func="terrain_levels")}
    )


@dataclass
class G1RoughBlindEnvCfg(G1RoughEnvCfg):
    """The rough task with a proprioceptive policy (the critic and the teacher group still read the scan): the
    student of the rough distillation task."""

    observations: dict[str, ObsGroupCfg] = field(default_factory=lambda: rough_observations(perceptive=False))
