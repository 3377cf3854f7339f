"""Velocity-tracking MDP terms as pure torch functions of the robot state.

Every function takes tensors with a leading env dimension and returns one value per env, so each term
can be tested against a hand-computed value and reused by any backend.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolab.envs.math import quat_rotate_inverse

GRAVITY_DIR = (0.0, 0.0, -1.0)


@dataclass
class RobotState:
    """Quantities derived once per control step from the backend's qpos/qvel."""

    base_pos: torch.Tensor  # (N, 3) world
    base_quat: torch.Tensor  # (N, 4) w, x, y, z
    base_lin_vel: torch.Tensor  # (N, 3) body frame
    base_ang_vel: torch.Tensor  # (N, 3) body frame
    projected_gravity: torch.Tensor  # (N, 3) body frame
    joint_pos: torch.Tensor  # (N, J)
    joint_vel: torch.Tensor  # (N, J)

    @staticmethod
    def from_generalised(
        qpos: torch.Tensor, qvel: torch.Tensor, qpos_adr, dof_adr, gravity: torch.Tensor | None = None
    ) -> RobotState:
        """``gravity``: GRAVITY_DIR on qpos's device, if the caller keeps one (building it is a host-to-device copy)."""
        quat = qpos[:, 3:7] / qpos[:, 3:7].norm(dim=-1, keepdim=True).clamp_min(1e-9)
        if gravity is None:
            gravity = torch.tensor(GRAVITY_DIR, device=qpos.device)
        gravity = gravity.expand(qpos.shape[0], 3)
        return RobotState(
            base_pos=qpos[:, :3],
            base_quat=quat,
            base_lin_vel=quat_rotate_inverse(quat, qvel[:, :3]),  # MuJoCo: free-joint linear velocity is world
            base_ang_vel=qvel[:, 3:6],  # and angular velocity is already in the body frame
            projected_gravity=quat_rotate_inverse(quat, gravity),
            joint_pos=qpos[:, qpos_adr],
            joint_vel=qvel[:, dof_adr],
        )


# --- rewards (positive = good; weights carry the sign) --------------------------------------------------
def track_lin_vel_xy_exp(command: torch.Tensor, base_lin_vel: torch.Tensor, std: float) -> torch.Tensor:
    error = (command[:, :2] - base_lin_vel[:, :2]).square().sum(dim=1)
    return torch.exp(-error / std**2)


def track_ang_vel_z_exp(command: torch.Tensor, base_ang_vel: torch.Tensor, std: float) -> torch.Tensor:
    error = (command[:, 2] - base_ang_vel[:, 2]).square()
    return torch.exp(-error / std**2)


def lin_vel_z_l2(base_lin_vel: torch.Tensor) -> torch.Tensor:
    return base_lin_vel[:, 2].square()


def ang_vel_xy_l2(base_ang_vel: torch.Tensor) -> torch.Tensor:
    return base_ang_vel[:, :2].square().sum(dim=1)


def l2(x: torch.Tensor) -> torch.Tensor:
    """Sum of squares over the last dim: joint torques, joint accelerations, action rate."""
    return x.square().sum(dim=1)


def flat_orientation_l2(projected_gravity: torch.Tensor) -> torch.Tensor:
    return projected_gravity[:, :2].square().sum(dim=1)


def undesired_contacts(forces: torch.Tensor, threshold: float) -> torch.Tensor:
    return (forces > threshold).float().sum(dim=1)


def feet_air_time(
    last_air_time: torch.Tensor, first_contact: torch.Tensor, command: torch.Tensor, threshold: float
) -> torch.Tensor:
    """Reward steps longer than ``threshold`` s, paid at touchdown, only while asked to move."""
    reward = ((last_air_time - threshold) * first_contact.float()).sum(dim=1)
    return reward * (command[:, :2].norm(dim=1) > 0.1).float()


# --- metrics ----------------------------------------------------------------------------------------------
def lin_vel_tracking_error(command: torch.Tensor, base_lin_vel: torch.Tensor) -> torch.Tensor:
    """Euclidean error (m/s) between commanded and achieved horizontal base velocity."""
    return (command[:, :2] - base_lin_vel[:, :2]).norm(dim=1)
