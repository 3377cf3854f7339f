"""The robot state the MDP reads each control step, derived once from the backend's generalised coordinates."""

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
