"""Reward terms: ``func(env, **params) -> (num_envs,)``, unweighted (the weight carries the sign)."""

from __future__ import annotations

import torch

from robolab.envs.mdp import kernels


def track_lin_vel_xy_exp(env, std: float, command_name: str = "base_velocity") -> torch.Tensor:
    """exp(-|command_xy - base_lin_vel_xy|^2 / std^2)."""
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
    return kernels.lin_vel_z_l2(env.state.base_lin_vel)


def ang_vel_xy_l2(env) -> torch.Tensor:
    return kernels.ang_vel_xy_l2(env.state.base_ang_vel)


def joint_torques_l2(env) -> torch.Tensor:
    return kernels.l2(torch.nan_to_num(env.backend.joint_torques))


def joint_acc_l2(env) -> torch.Tensor:
    """Joint accelerations between two control steps."""
    return kernels.l2((env.state.joint_vel - env.prev_joint_vel) / env.step_dt)


def action_rate_l2(env) -> torch.Tensor:
    return kernels.l2(env.actions - env.last_actions)


def feet_air_time(env, threshold: float, command_name: str = "base_velocity") -> torch.Tensor:
    """Steps longer than ``threshold`` s, paid at touchdown, only while asked to move."""
    return kernels.feet_air_time(env.last_air_time, env.first_contact, env.command(command_name), threshold)


def undesired_contacts(env, threshold: float = 1.0, body_group: str = "undesired") -> torch.Tensor:
    """How many bodies of ``body_group`` (``RobotCfg``'s ``undesired_contact_bodies``) touch with over ``threshold``
    newtons."""
    return kernels.undesired_contacts(env.backend.contact_forces(body_group), threshold)


def flat_orientation_l2(env) -> torch.Tensor:
    return kernels.flat_orientation_l2(env.state.projected_gravity)


def feet_stumble(env, ratio: float = 4.0, body_group: str = "foot") -> torch.Tensor:
    """1 when a foot is pushed sideways harder than ``ratio`` times it is held up (it hit a riser or a box edge)."""
    force = torch.nan_to_num(env.backend.contact_force_vectors(body_group))
    return (force[..., :2].norm(dim=-1) > ratio * force[..., 2].abs()).any(dim=1).float()


def base_height_l2(env, target_height: float) -> torch.Tensor:
    """(height of the base above the ground beneath it - ``target_height``)^2."""
    base = env.state.base_pos
    return (base[:, 2] - env.ground_height(base[:, :2]) - target_height).square()
