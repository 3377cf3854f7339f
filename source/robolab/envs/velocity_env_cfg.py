"""The velocity-tracking task's config: the simulation settings and its declared MDP (``robolab.envs.terms``).

``VelocityEnvCfg``'s tables (``observations``, ``rewards``, ``terminations``, ``events``, ``commands``,
``curricula``) are what the task computes; their defaults below are Isaac Lab's flat velocity task, and a robot's
task folder subclasses the config to change them. Hydra ``env.*`` overrides land on these dataclasses with Isaac
Lab's spelling: ``env.rewards.feet_air_time.weight=0.5``, ``~env.rewards.lin_vel_z``,
``env.rewards.my_term='{func: mypkg.terms:bonus, weight: 1.0}'``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from robolab.assets.robot_cfg import RobotCfg
from robolab.envs.terms import (
    CommandTermCfg,
    CurriculumTermCfg,
    EventTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from robolab.terrains.config import TerrainCfg


def velocity_policy_terms() -> dict[str, ObsTermCfg]:
    """The proprioceptive frame: base velocities, gravity, command, joint state, last action (Isaac Lab's)."""
    return {
        "base_lin_vel": ObsTermCfg(func="base_lin_vel", noise=0.1),
        "base_ang_vel": ObsTermCfg(func="base_ang_vel", noise=0.2),
        "projected_gravity": ObsTermCfg(func="projected_gravity", noise=0.05),
        "velocity_commands": ObsTermCfg(func="generated_commands", params={"command_name": "base_velocity"}),
        "joint_pos": ObsTermCfg(func="joint_pos_rel", noise=0.01),
        "joint_vel": ObsTermCfg(func="joint_vel", noise=1.5),
        "actions": ObsTermCfg(func="last_action"),
    }


def velocity_privileged_terms() -> dict[str, ObsTermCfg]:
    """What the critic (and a distillation teacher) sees beyond the policy's frame: the randomised physics and the
    feet's contacts."""
    return {
        "friction": ObsTermCfg(func="physics_param", params={"name": "friction"}),
        "added_base_mass": ObsTermCfg(func="physics_param", params={"name": "added_base_mass"}),
        "foot_contact": ObsTermCfg(func="foot_contact"),
    }


def velocity_observations() -> dict[str, ObsGroupCfg]:
    """``policy``: noisy proprioception; ``critic`` and ``teacher``: the same terms exact, plus privileged ones."""
    privileged = {**velocity_policy_terms(), **velocity_privileged_terms()}
    return {
        "policy": ObsGroupCfg(terms=velocity_policy_terms()),
        "critic": ObsGroupCfg(terms=privileged, enable_corruption=False),
        "teacher": ObsGroupCfg(terms=copy.deepcopy(privileged), enable_corruption=False),
    }


def velocity_rewards() -> dict[str, RewardTermCfg]:
    """Isaac Lab's flat velocity rewards; weights are multiplied by the control dt."""
    return {
        "track_lin_vel_xy": RewardTermCfg(func="track_lin_vel_xy_exp", weight=1.5, params={"std": 0.5}),
        "track_ang_vel_z": RewardTermCfg(func="track_ang_vel_z_exp", weight=0.75, params={"std": 0.5}),
        "lin_vel_z": RewardTermCfg(func="lin_vel_z_l2", weight=-2.0),
        "ang_vel_xy": RewardTermCfg(func="ang_vel_xy_l2", weight=-0.05),
        "joint_torques": RewardTermCfg(func="joint_torques_l2", weight=-2.0e-4),
        "joint_acc": RewardTermCfg(func="joint_acc_l2", weight=-2.5e-7),
        "action_rate": RewardTermCfg(func="action_rate_l2", weight=-0.01),
        "feet_air_time": RewardTermCfg(func="feet_air_time", weight=0.25, params={"threshold": 0.5}),
        "undesired_contacts": RewardTermCfg(func="undesired_contacts", weight=-1.0, params={"threshold": 1.0}),
        "flat_orientation": RewardTermCfg(func="flat_orientation_l2", weight=-2.5),
    }


def velocity_terminations() -> dict[str, TerminationTermCfg]:
    """The velocity task's terminations: time-out, base contact and base height (a terrain adds its own)."""
    return {
        "time_out": TerminationTermCfg(func="time_out", time_out=True),
        "base_contact": TerminationTermCfg(func="illegal_contact", params={"threshold": 1.0}),
        "base_height": TerminationTermCfg(func="base_height_below", params={"min_height": 0.12}),
    }


def velocity_events() -> dict[str, EventTermCfg]:
    """Friction and base mass once per physics variant; a random yaw, pose and velocity per episode; pushes."""
    return {
        "physics_material": EventTermCfg(
            func="randomize_friction", mode="startup", params={"friction_range": (0.4, 1.25)}
        ),
        "add_base_mass": EventTermCfg(func="randomize_base_mass", mode="startup", params={"mass_range": (-1.0, 3.0)}),
        "reset_robot": EventTermCfg(
            func="reset_robot_state",
            mode="reset",
            params={"yaw_range": (-math.pi, math.pi), "joint_pos_scale": (0.5, 1.5), "base_velocity": 0.5},
        ),
        "push_robot": EventTermCfg(
            func="push_by_setting_velocity",
            mode="interval",
            interval_range_s=(10.0, 15.0),
            params={"velocity_range": 0.5},
        ),
    }


def velocity_commands(heading_command: bool = False) -> dict[str, CommandTermCfg]:
    """Forward, lateral and yaw-rate commands, each uniform in [-1, 1], resampled every 10 s, 2 % standing. With
    ``heading_command`` (Isaac Lab's and legged_gym's setting, the rough tasks') the yaw rate steers towards a drawn
    heading instead, so a robot that tracks its command walks straight lines rather than circles: the terrain
    curriculum judges an episode by the distance walked from its start."""
    return {
        "base_velocity": CommandTermCfg(
            func="UniformVelocityCommand",
            params={
                "resampling_time_s": 10.0,
                "lin_vel_x": (-1.0, 1.0),
                "lin_vel_y": (-1.0, 1.0),
                "ang_vel_z": (-1.0, 1.0),
                "standing_fraction": 0.02,
                "heading_command": heading_command,
                "heading": (-math.pi, math.pi),
                "heading_stiffness": 0.5,
            },
        )
    }


def height_scan_term(noise: float = 0.0) -> ObsTermCfg:
    """The ground around the base: 1.6 x 1.0 m at 0.1 m (187 points), clipped to +-1 m (Isaac Lab's rough Go2)."""
    return ObsTermCfg(func="height_scan", params={"size": (1.6, 1.0), "resolution": 0.1}, noise=noise, clip=(-1.0, 1.0))


def rough_observations(perceptive: bool) -> dict[str, ObsGroupCfg]:
    """``policy``: noisy proprioception, plus the noisy height scan when ``perceptive``; ``teacher``: the perceptive
    policy's terms, exact (so a perceptive policy, or the teacher task's, distils into a blind student); ``critic``:
    everything exact, privileged physics and the scan included."""
    proprio = velocity_policy_terms()
    policy = {**proprio, "height_scan": height_scan_term(noise=0.1)} if perceptive else proprio
    teacher = {**velocity_policy_terms(), "height_scan": height_scan_term()}
    critic = {**velocity_policy_terms(), **velocity_privileged_terms(), "height_scan": height_scan_term()}
    return {
        "policy": ObsGroupCfg(terms=policy),
        "critic": ObsGroupCfg(terms=critic, enable_corruption=False),
        "teacher": ObsGroupCfg(terms=teacher, enable_corruption=False),
    }


def terrain_terminations() -> dict[str, TerminationTermCfg]:
    """What a generated terrain adds to a task's terminations, both time-outs (the robot walked where it was
    commanded; its value is bootstrapped): reaching the terrain's edge, and walking half a tile from the start, which
    ends a walker's episode once it has earned its promotion, so the curriculum judges it every few seconds."""
    return {
        "out_of_terrain": TerminationTermCfg(func="terrain_out_of_bounds", time_out=True),
        "tile_crossed": TerminationTermCfg(func="terrain_tile_crossed", time_out=True),
    }


def rough_backend() -> BackendCfg:
    """16 physics variants on MuJoCo C: each copy of the model holds the terrain's height field (6 MB)."""
    return BackendCfg(num_variants=16)


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
    """The physics backend and its settings (threads, buffer sizes)."""

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
    compile_workers: int | None = None
    """Warp backend: threads that compile (or load from the kernel cache) the step's kernels before its first run
    (``robolab.envs.backends.warp_compile``); None = the cores this process may use (a rank: its share of the
    node's), at most 16; 0 or 1 = warp's own loading, one module at a time, at each kernel's first launch."""


@dataclass
class VelocityEnvCfg:
    """A velocity-tracking task's env: the robot, physics, terrain, and the MDP as tables of declared terms."""

    num_envs: int = 1024
    """Parallel envs on this rank (``--num_envs``)."""
    seed: int = 42
    """Seeds the env's random draws (``--seed``; rank r adds r)."""
    device: str = "cpu"
    """Where observations, rewards and actions live (``--device``)."""
    sim_dt: float = 0.005
    """The physics step, seconds."""
    decimation: int = 4
    """Physics steps per control step (the policy acts every ``sim_dt * decimation`` s)."""
    episode_length_s: float = 20.0
    """An episode's time limit, seconds (a time-out, not a failure)."""
    amp_terms: list[str] = field(default_factory=list)
    """AMP state terms of an ``amp`` observation group (``robolab.amp.features.AMP_TERMS``); empty: no group.
    The group is the ``amp_state`` observation term over these (the motion clips are built from the same)."""
    action_scale: float = 0.25
    """Joint position targets are the default pose plus ``action_scale`` times the action."""
    clip_actions: float = 100.0
    """Actions are clipped to +-this before scaling."""
    only_positive_rewards: bool = False
    """Clip each step's summed reward at 0 (legged_gym's rough-terrain setting): while the penalties outweigh the
    tracking reward, as they do early on rough ground, ending an episode early would otherwise pay, and the policy
    learns to fall. The per-term episode sums (``Episode_Reward/*``) stay unclipped."""
    contact_force_threshold: float = 1.0
    """Newtons on a foot that count as ground contact (air time, gait scores, the ``foot_contact`` term)."""
    velocity_command: str = "base_velocity"
    """The command term whose (lin x, lin y, yaw rate) command the tracking metrics and the viewer read."""
    robot: RobotCfg = field(default_factory=RobotCfg)
    """The robot; a task sets it (the generic default names no model)."""
    gaits: dict[str, list[list[str]]] | None = field(default_factory=dict)
    """Gait patterns scored per step from foot contacts (``robolab.envs.gaits.GaitScores``); null: none."""
    backend: BackendCfg = field(default_factory=BackendCfg)
    """The physics: MuJoCo C on the CPU, MuJoCo Warp on a GPU (``env.backend=warp``)."""
    terrain: TerrainCfg | None = None
    """A generated terrain (``robolab.terrains``) in place of the robot model's floor plane; None: flat floor."""
    observations: dict[str, ObsGroupCfg] = field(default_factory=velocity_observations)
    """Observation groups by name (``policy``, ``critic``, ...), each a table of declared terms."""
    rewards: dict[str, RewardTermCfg] = field(default_factory=velocity_rewards)
    """Reward terms by name, each a function, its parameters and its weight (summed times ``step_dt``)."""
    terminations: dict[str, TerminationTermCfg] = field(default_factory=velocity_terminations)
    """Termination terms by name; ``time_out`` terms end an episode without failing it."""
    events: dict[str, EventTermCfg] = field(default_factory=velocity_events)
    """Event terms: randomisation at start-up and reset, pushes at intervals."""
    commands: dict[str, CommandTermCfg] = field(default_factory=velocity_commands)
    """Command terms by name (``base_velocity`` is the velocity the policy tracks)."""
    curricula: dict[str, CurriculumTermCfg] = field(default_factory=dict)
    """Curriculum terms (terrain levels, command ranges), run at resets."""
    divergence: DivergenceCfg = field(default_factory=DivergenceCfg)
    """How diverging physics is found and contained (the env reset and counted, never a crash)."""
    cuda_graph: bool | None = None
    """Replay each control step (every term, the resets, the observations and MuJoCo Warp's physics) as one CUDA
    graph (``robolab.envs.captured_step``). None (the default): on where it can run, a GPU with MuJoCo Warp; true
    there too, and an error elsewhere; false: every step eager (a task of your own whose terms keep Python state)."""

    def cuda_graph_possible(self) -> bool:
        """Whether this env's step can be replayed as a CUDA graph: a CUDA device and MuJoCo Warp."""
        from robolab.envs.backends import resolve_name  # here: the backends import robolab.assets, which imports this

        return str(self.device).startswith("cuda") and resolve_name(self.backend.name, self.device) == "warp"

    def uses_cuda_graph(self) -> bool:
        """Whether the step is replayed as a CUDA graph (``cuda_graph``; None: wherever it is possible)."""
        return self.cuda_graph_possible() if self.cuda_graph is None else bool(self.cuda_graph)

    @property
    def step_dt(self) -> float:
        return self.sim_dt * self.decimation


TERM_TABLES = ("observations", "rewards", "terminations", "events", "commands", "curricula")
"""The fields of ``VelocityEnvCfg`` that are tables of declared terms (a saved run's table replaces the task's)."""


_COMMAND_FIELDS = (
    "resampling_time_s",
    "lin_vel_x",
    "lin_vel_y",
    "ang_vel_z",
    "standing_fraction",
    "heading_command",
    "heading",
    "heading_stiffness",
)
RENAMED: dict[str, tuple[str, ...]] = {
    "policy_history": ("observations.policy.history_length",),
    "noise.enabled": ("observations.policy.enable_corruption",),
    **{
        f"noise.{term}": (f"observations.policy.terms.{term}.noise",)
        for term in ("base_lin_vel", "base_ang_vel", "projected_gravity", "joint_pos", "joint_vel")
    },
    "rewards.tracking_std": ("rewards.track_lin_vel_xy.params.std", "rewards.track_ang_vel_z.params.std"),
    "rewards.feet_air_time_threshold": ("rewards.feet_air_time.params.threshold",),
    "terminations.min_base_height": ("terminations.base_height.params.min_height",),
    "terminations.contact_force_threshold": (
        "contact_force_threshold",
        "terminations.base_contact.params.threshold",
        "rewards.undesired_contacts.params.threshold",
    ),
    **{f"commands.{name}": (f"commands.base_velocity.params.{name}",) for name in _COMMAND_FIELDS},
    "events.reset_base_yaw": ("events.reset_robot.params.yaw_range",),
    "events.reset_joint_pos_scale": ("events.reset_robot.params.joint_pos_scale",),
    "events.reset_base_vel": ("events.reset_robot.params.base_velocity",),
    "events.friction": ("events.physics_material.params.friction_range",),
    "events.added_base_mass": ("events.add_base_mass.params.mass_range",),
    "events.push_interval_s": ("events.push_robot.interval_range_s",),
    "events.push_vel_xy": ("events.push_robot.params.velocity_range",),
}
"""``env.*`` keys of the MDP before its terms were declared -> the keys that hold the same values now (a run's
saved ``params/env.yaml`` from before is read through this; on the command line an old key is a one-line error
naming the new one). A reward weight's old spelling, ``env.rewards.<term>=<number>``, still sets the weight."""
