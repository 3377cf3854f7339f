"""The MDP's kernels: pure torch functions of tensors with a leading env dimension, one value per env.

The term functions of ``robolab.envs.mdp`` read the env and call these, so each can be tested against a
hand-computed value and reused by any term or backend.
"""

from __future__ import annotations

import torch


# --- rewards (positive = good; weights carry the sign) --------------------------------------------------
def track_lin_vel_xy_exp(command: torch.Tensor, base_lin_vel: torch.Tensor, std: float) -> torch.Tensor:
    """``exp(-|command_xy - base_lin_vel_xy|^2 / std^2)``."""
    error = (command[:, :2] - base_lin_vel[:, :2]).square().sum(dim=1)
    return torch.exp(-error / std**2)


def track_ang_vel_z_exp(command: torch.Tensor, base_ang_vel: torch.Tensor, std: float) -> torch.Tensor:
    """``exp(-(command_yaw_rate - base_ang_vel_z)^2 / std^2)``."""
    error = (command[:, 2] - base_ang_vel[:, 2]).square()
    return torch.exp(-error / std**2)


def lin_vel_z_l2(base_lin_vel: torch.Tensor) -> torch.Tensor:
    """The base's vertical velocity, squared."""
    return base_lin_vel[:, 2].square()


def ang_vel_xy_l2(base_ang_vel: torch.Tensor) -> torch.Tensor:
    """The base's roll and pitch rates, squared and summed."""
    return base_ang_vel[:, :2].square().sum(dim=1)


def l2(x: torch.Tensor) -> torch.Tensor:
    """Sum of squares over the last dim: joint torques, joint accelerations, action rate."""
    return x.square().sum(dim=1)


def flat_orientation_l2(projected_gravity: torch.Tensor) -> torch.Tensor:
    """The gravity vector's x and y in the base frame, squared and summed (0 when level)."""
    return projected_gravity[:, :2].square().sum(dim=1)


def undesired_contacts(forces: torch.Tensor, threshold: float) -> torch.Tensor:
    """How many of the bodies feel a force over ``threshold``."""
    return (forces > threshold).float().sum(dim=1)


def feet_air_time(
    last_air_time: torch.Tensor, first_contact: torch.Tensor, command: torch.Tensor, threshold: float
) -> torch.Tensor:
    """Reward steps longer than ``threshold`` s, paid at touchdown, only while asked to move."""
    reward = ((last_air_time - threshold) * first_contact.float()).sum(dim=1)
    return reward * (command[:, :2].norm(dim=1) > 0.1).float()


def feet_air_time_biped(
    air_time: torch.Tensor, contact_time: torch.Tensor, command: torch.Tensor, threshold: float
) -> torch.Tensor:
    """While one foot alone is on the ground: the shorter of the feet's times in their current phase (stance or
    swing), capped at ``threshold`` s; only while asked to move. Pays single support as it happens, not at
    touchdown, and nothing for hopping (no foot down) or standing on both."""
    in_contact = contact_time > 0
    in_phase = torch.where(in_contact, contact_time, air_time)
    single_stance = in_contact.sum(dim=1) == 1
    reward = torch.where(single_stance, in_phase.min(dim=1).values, 0.0).clamp(max=threshold)
    return reward * (command[:, :2].norm(dim=1) > 0.1).float()


def feet_slide(foot_velocity: torch.Tensor, contact: torch.Tensor) -> torch.Tensor:
    """Horizontal speed (m/s) of the feet that are on the ground, summed."""
    return (foot_velocity[..., :2].norm(dim=-1) * contact.float()).sum(dim=1)


def feet_clearance(clearance: torch.Tensor, foot_velocity: torch.Tensor, target_height: float) -> torch.Tensor:
    """How far each moving foot is below ``target_height`` m above the ground beneath it, as a share of that target,
    summed over the feet. A foot counts by ``tanh(2 * its horizontal speed in m/s)``: a swinging foot fully, a foot
    planted on the ground not at all."""
    shortfall = (target_height - clearance).clamp(min=0.0) / target_height
    return (shortfall * torch.tanh(2.0 * foot_velocity[..., :2].norm(dim=-1))).sum(dim=1)


def joint_deviation_l1(joint_pos: torch.Tensor, default: torch.Tensor) -> torch.Tensor:
    """The joints' absolute distance from ``default``, summed."""
    return (joint_pos - default).abs().sum(dim=1)


def joint_pos_limits(joint_pos: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor) -> torch.Tensor:
    """Radians beyond each joint's (soft) limits, summed."""
    return ((lower - joint_pos).clamp(min=0.0) + (joint_pos - upper).clamp(min=0.0)).sum(dim=1)


# --- metrics ----------------------------------------------------------------------------------------------
def lin_vel_tracking_error(command: torch.Tensor, base_lin_vel: torch.Tensor) -> torch.Tensor:
    """Euclidean error (m/s) between commanded and achieved horizontal base velocity."""
    return (command[:, :2] - base_lin_vel[:, :2]).norm(dim=1)


def rotate_by_roll_pitch(vector: torch.Tensor, roll: torch.Tensor, pitch: torch.Tensor) -> torch.Tensor:
    """(num_envs, 3) vectors expressed in a frame turned by ``roll`` about x, then ``pitch`` about the new y
    (the transpose of R = Rx(roll) Ry(pitch) applied to each)."""
    cr, sr, cp, sp = roll.cos(), roll.sin(), pitch.cos(), pitch.sin()
    x, y, z = vector.unbind(dim=1)
    # R^T v with R = Rx(roll) @ Ry(pitch)
    return torch.stack([cp * x + sp * sr * y - sp * cr * z, cr * y + sr * z, sp * x - cp * sr * y + cp * cr * z], dim=1)
