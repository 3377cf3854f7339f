"""Typed config of the velocity-tracking MDP. Hydra ``env.*`` overrides land on these dataclasses."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robolab.assets.robot_cfg import RobotCfg


@dataclass
class CommandsCfg:
    resampling_time_s: float = 10.0
    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    lin_vel_y: tuple[float, float] = (-1.0, 1.0)
    ang_vel_z: tuple[float, float] = (-1.0, 1.0)
    standing_fraction: float = 0.02
    """Share of envs whose command is all zeros (stand still)."""
    heading_command: bool = False
    """Sample a target heading and derive the yaw-rate command from the heading error."""
    heading: tuple[float, float] = (-math.pi, math.pi)
    heading_stiffness: float = 0.5


@dataclass
class NoiseCfg:
    """Uniform noise half-widths added to the ``policy`` group (the ``critic`` group is noise-free)."""

    enabled: bool = True
    base_lin_vel: float = 0.1
    base_ang_vel: float = 0.2
    projected_gravity: float = 0.05
    joint_pos: float = 0.01
    joint_vel: float = 1.5


@dataclass
class RewardsCfg:
    """Weights (multiplied by the control dt, as in Isaac Lab) and kernel parameters."""

    track_lin_vel_xy: float = 1.5
    track_ang_vel_z: float = 0.75
    lin_vel_z: float = -2.0
    ang_vel_xy: float = -0.05
    joint_torques: float = -2.0e-4
    joint_acc: float = -2.5e-7
    action_rate: float = -0.01
    feet_air_time: float = 0.25
    undesired_contacts: float = -1.0
    flat_orientation: float = -2.5
    tracking_std: float = 0.5
    """Std of the exp tracking kernels: exp(-err^2 / std^2)."""
    feet_air_time_threshold: float = 0.5


@dataclass
class TerminationsCfg:
    min_base_height: float = 0.12
    contact_force_threshold: float = 1.0
    """Newtons on a termination body (or an undesired body) that count as a contact."""


@dataclass
class EventsCfg:
    reset_base_yaw: tuple[float, float] = (-math.pi, math.pi)
    reset_joint_pos_scale: tuple[float, float] = (0.5, 1.5)
    reset_base_vel: float = 0.5
    """Half-width of the uniform initial base linear and angular velocity."""
    friction: tuple[float, float] = (0.4, 1.25)
    added_base_mass: tuple[float, float] = (-1.0, 3.0)
    push_interval_s: tuple[float, float] = (10.0, 15.0)
    push_vel_xy: float = 0.5


@dataclass
class DivergenceCfg:
    """Bounds beyond which an env's physics has diverged, though still finite (a step too large for the solver, a
    model the solver cannot hold): that env is reset alone, counted (``Metrics/diverged_total``) and kept out of
    observations, rewards and the update. Far beyond anything a legged robot does, so a healthy run never trips them.
    """

    max_base_lin_vel: float = 50.0
    """m/s, any axis."""
    max_base_ang_vel: float = 200.0
    """rad/s, any axis."""
    max_joint_vel: float = 500.0
    """rad/s."""
    max_joint_acc: float = 1.0e5
    """rad/s^2, between two control steps."""
    max_base_distance: float = 1.0e3
    """m from the origin, any axis."""
    joint_limit_margin: float = 1.0
    """rad beyond a limited joint's range."""
    stop_fraction: float = 0.5
    """Training stops with an error once this share of the env steps of a check window diverged."""
    check_every: int = 50
    """Control steps in a check window (one host synchronisation per window)."""


@dataclass
class BackendCfg:
    name: str = "auto"
    """``mujoco`` (MuJoCo C on CPU threads), ``warp`` (MuJoCo Warp, on a GPU or warp's CPU device); ``auto`` picks
    warp on a GPU and mujoco on the CPU."""
    num_threads: int | None = None
    """Worker threads for the mujoco backend; None = the cores this process may use."""
    num_variants: int | None = 64
    """Randomised physics variants (friction, base mass), each shared by a block of envs; None = one per env."""
    nconmax: int | None = None
    """Warp backend: contacts allocated per env (MuJoCo Warp's own estimate when None)."""
    njmax: int | None = None
    """Warp backend: constraint rows allocated per env (MuJoCo Warp's own estimate when None)."""


@dataclass
class VelocityEnvCfg:
    num_envs: int = 1024
    seed: int = 42
    device: str = "cpu"
    sim_dt: float = 0.005
    decimation: int = 4
    episode_length_s: float = 20.0
    amp_terms: list[str] = field(default_factory=list)
    """AMP state terms for an ``amp`` observation group (see ``robolab.amp.features.AMP_TERMS``); empty = no group."""
    policy_history: int = 1
    """Frames stacked in the ``policy`` group (oldest first); 1 = the current frame only."""
    action_scale: float = 0.25
    clip_actions: float = 100.0
    robot: RobotCfg = field(default_factory=RobotCfg)
    """The robot; a task sets it (the generic default names no model)."""
    gaits: dict[str, list[list[str]]] | None = field(default_factory=dict)
    """Gait patterns scored per step from foot contacts (``robolab.envs.velocity_terms.GaitScores``); null: none."""
    backend: BackendCfg = field(default_factory=BackendCfg)
    commands: CommandsCfg = field(default_factory=CommandsCfg)
    noise: NoiseCfg = field(default_factory=NoiseCfg)
    rewards: RewardsCfg = field(default_factory=RewardsCfg)
    terminations: TerminationsCfg = field(default_factory=TerminationsCfg)
    events: EventsCfg = field(default_factory=EventsCfg)
    divergence: DivergenceCfg = field(default_factory=DivergenceCfg)

    @property
    def step_dt(self) -> float:
        return self.sim_dt * self.decimation


RANGES = {
    "commands": ("lin_vel_x", "lin_vel_y", "ang_vel_z", "heading"),
    "events": ("reset_base_yaw", "reset_joint_pos_scale", "friction", "added_base_mass", "push_interval_s"),
}
"""The (low, high) fields sampled uniformly; ``check_ranges`` validates them."""


def check_ranges(cfg: VelocityEnvCfg) -> None:
    """Every sampled range is two finite numbers, low <= high (one-line ``ValueError`` naming the key)."""
    for section, names in RANGES.items():
        for name in names:
            value = getattr(getattr(cfg, section), name)
            ok = len(value) == 2 and all(math.isfinite(v) for v in value) and value[0] <= value[1]
            if not ok:
                raise ValueError(f"env.{section}.{name}={list(value)}: expected [low, high], two finite numbers")
