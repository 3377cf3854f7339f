"""Quaternion helpers in torch (MuJoCo's w, x, y, z order)."""

from __future__ import annotations

import torch


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate world-frame vectors ``v`` (..., 3) into the frame of unit quaternions ``q`` (..., 4), of one shape."""
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(xyz, v, dim=-1)
    return v - w * t + torch.cross(xyz, t, dim=-1)


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate frame-``q`` vectors ``v`` (..., 3) into the world frame (``q`` (..., 4), of one shape)."""
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(xyz, v, dim=-1)
    return v + w * t + torch.cross(xyz, t, dim=-1)


def yaw_quat(yaw: torch.Tensor) -> torch.Tensor:
    """Unit quaternions (N, 4) for rotations about z by ``yaw`` (N,)."""
    half = 0.5 * yaw
    zeros = torch.zeros_like(yaw)
    return torch.stack([torch.cos(half), zeros, zeros, torch.sin(half)], dim=-1)


def heading(q: torch.Tensor) -> torch.Tensor:
    """Yaw angle (N,) of the body x axis projected on the ground plane: the first column of ``q``'s rotation matrix,
    written out (no constant axis to copy to the device, which a captured step could not do)."""
    w, x, y, z = q.unbind(-1)
    return torch.atan2(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z))


def wrap_to_pi(angle: torch.Tensor) -> torch.Tensor:
    """Angles wrapped to [-pi, pi)."""
    return torch.remainder(angle + torch.pi, 2 * torch.pi) - torch.pi
