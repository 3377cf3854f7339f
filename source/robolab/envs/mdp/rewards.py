"""Reward terms: ``func(env, **params) -> (num_envs,)``, unweighted (the weight carries the sign)."""

from __future__ import annotations

import torch

from robolab.envs.mdp import kernels
from robolab.envs.mdp.observations import foot_clearance
from robolab.names import matching_names


def track_lin_vel_xy_exp(env, std: float, command_name: str = "base_velocity") -> torch.Tensor:
    """``exp(-|command_xy - base_lin_vel_xy|^2 / std^2)``."""
    _check_std(std)
    return kernels.track_lin_vel_xy_exp(env.command(command_name), env.state.base_lin_vel, std)


def track_ang_vel_z_exp(env, std: float, command_name: str = "base_velocity") -> torch.Tensor:
    """exp(-(command_yaw_rate - base_yaw_rate)^2 / std^2)."""
    _check_std(std)
    return kernels.track_ang_vel_z_exp(env.command(command_name), env.state.base_ang_vel, std)


def _check_std(std: float) -> None:
    if not std > 0:  # a host value: no wait for the GPU
        raise ValueError(f"std={std}: the tracking kernel's width must be > 0 (m/s or rad/s)")


def lin_vel_z_l2(env) -> torch.Tensor:
    """The base's vertical velocity, squared (a penalty with a negative weight)."""
    return kernels.lin_vel_z_l2(env.state.base_lin_vel)


def ang_vel_xy_l2(env) -> torch.Tensor:
    """The base's roll and pitch rates, squared and summed."""
    return kernels.ang_vel_xy_l2(env.state.base_ang_vel)


def joint_torques_l2(env, joints: list[str] | None = None) -> torch.Tensor:
    """Joint torques squared, summed over the joints matching ``joints`` (regular expressions; all when None)."""
    torques = torch.nan_to_num(env.backend.joint_torques)
    return kernels.l2(torques if joints is None else torques[:, joint_ids(env, joints)])


def joint_acc_l2(env, joints: list[str] | None = None) -> torch.Tensor:
    """Joint accelerations between two control steps, squared, summed over the joints matching ``joints`` (all
    when None). A humanoid's light arm and wrist links swing hardest under an untrained policy's noise; Isaac Lab's
    G1 prices the hips and knees only."""
    acc = (env.state.joint_vel - env.prev_joint_vel) / env.step_dt
    return kernels.l2(acc if joints is None else acc[:, joint_ids(env, joints)])


def action_rate_l2(env) -> torch.Tensor:
    """The change of the action since the last step, squared and summed."""
    return kernels.l2(env.actions - env.last_actions)


def feet_air_time(env, threshold: float, command_name: str = "base_velocity") -> torch.Tensor:
    """Steps longer than ``threshold`` s, paid at touchdown, only while asked to move."""
    return kernels.feet_air_time(env.last_air_time, env.first_contact, env.command(command_name), threshold)


def undesired_contacts(env, threshold: float = 1.0, body_group: str = "undesired") -> torch.Tensor:
    """How many bodies of ``body_group`` (``RobotCfg``'s ``undesired_contact_bodies``) touch with over ``threshold``
    newtons."""
    return kernels.undesired_contacts(env.backend.contact_forces(body_group), threshold)


def flat_orientation_l2(env) -> torch.Tensor:
    """How far the base tilts: the gravity vector's x and y in the base frame, squared and summed."""
    return kernels.flat_orientation_l2(env.state.projected_gravity)


def feet_stumble(env, ratio: float = 4.0, body_group: str = "foot") -> torch.Tensor:
    """1 when a foot is pushed sideways harder than ``ratio`` times it is held up (it hit a riser or a box edge)."""
    force = torch.nan_to_num(env.backend.contact_force_vectors(body_group))
    return (force[..., :2].norm(dim=-1) > ratio * force[..., 2].abs()).any(dim=1).float()


def base_height_l2(env, target_height: float) -> torch.Tensor:
    """(height of the base above the ground beneath it - ``target_height``)^2."""
    base = env.state.base_pos
    return (base[:, 2] - env.ground_height(base[:, :2]) - target_height).square()


def feet_clearance(env, target_height: float) -> torch.Tensor:
    """Swinging feet held lower than ``target_height`` m above the ground beneath them (the foot body's origin: a
    Go2 foot's centre stands 0.022 m up), summed as shares of the target (``kernels.feet_clearance``). A blind
    policy cannot see a riser coming: a teacher that lifts every swing high leaves its student a gait that clears
    one unseen."""
    if not target_height > 0:  # a host value: no wait for the GPU
        raise ValueError(f"target_height={target_height}: the swing clearance must be > 0 m")
    clearance = foot_clearance(env)
    return kernels.feet_clearance(clearance, torch.nan_to_num(env.backend.foot_velocities), target_height)


def is_terminated(env) -> torch.Tensor:
    """1 where the episode ends by a fall this step (a termination that is not a time-out): with a negative weight,
    the price of falling (Isaac Lab's ``termination_penalty``)."""
    return env.reset_terminated.float()


def feet_air_time_biped(env, threshold: float, command_name: str = "base_velocity") -> torch.Tensor:
    """A biped's steps (Isaac Lab's ``feet_air_time_positive_biped``): while exactly one foot is down, the shorter
    of the feet's current stance and swing times, capped at ``threshold`` s; only while asked to move."""
    _check_feet(env, "feet_air_time_biped", 2)
    return kernels.feet_air_time_biped(env.feet_air_time, env.feet_contact_time, env.command(command_name), threshold)


def feet_slide(env) -> torch.Tensor:
    """Horizontal speed (m/s) of the feet on the ground, summed: a foot that slips or shuffles."""
    return kernels.feet_slide(torch.nan_to_num(env.backend.foot_velocities), env.foot_contact)


def joint_deviation_l1(env, joints: list[str]) -> torch.Tensor:
    """Radians the joints matching ``joints`` (regular expressions, whole names) are from their default pose,
    summed: keeps the joints a gait does not need (a humanoid's arms, waist, hip yaw and roll) near home."""
    ids = joint_ids(env, joints)
    return kernels.joint_deviation_l1(env.state.joint_pos[:, ids], env.default_joint_pos[ids])


def joint_pos_limits(env, joints: list[str] | None = None, soft_ratio: float = 1.0) -> torch.Tensor:
    """Radians beyond the limits of the joints matching ``joints`` (all when None), narrowed about their middle to
    ``soft_ratio`` of their range, summed (Isaac Lab's ``joint_pos_limits`` with its soft limits)."""
    ids = joint_ids(env, joints or [".*"])
    key = ("joint_pos_limits", tuple(joints or ()), soft_ratio)
    limits = env.term_cache.get(key)
    if limits is None:  # made once: the limits do not change
        if not 0 < soft_ratio <= 1:
            raise ValueError(f"soft_ratio={soft_ratio}: must be in (0, 1] (the share of each joint's range allowed)")
        lo, hi = env.joint_lo[ids], env.joint_hi[ids]
        mid, half = (lo + hi) / 2, (hi - lo) / 2 * soft_ratio
        limits = env.term_cache[key] = (mid - half, mid + half)
    return kernels.joint_pos_limits(env.state.joint_pos[:, ids], *limits)


def joint_ids(env, patterns: list[str]) -> torch.Tensor:
    """Indices (policy order) of the robot's joints whose names fully match one of ``patterns``; made once per
    pattern list. A pattern that matches no joint is an error naming the joints there are."""
    key = ("joint_ids", tuple(patterns))
    ids = env.term_cache.get(key)
    if ids is None:
        chosen = matching_names(list(env.cfg.robot.joint_names), patterns, "joints", "the robot's joints")
        ids = env.term_cache[key] = torch.tensor(chosen, dtype=torch.long, device=env.device)
    return ids


def _check_feet(env, term: str, count: int) -> None:
    feet = env.cfg.robot.foot_bodies
    if len(feet) != count:
        raise ValueError(f"{term} needs {count} feet; env.robot.foot_bodies has {len(feet)}: {list(feet)}")
