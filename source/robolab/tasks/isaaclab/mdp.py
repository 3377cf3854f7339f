"""Observation terms robolab adds to Isaac Lab's velocity tasks."""

from __future__ import annotations

import torch
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils.math import quat_apply_inverse


def body_pos_b(env, asset_cfg: SceneEntityCfg) -> torch.Tensor:
    """Positions of ``asset_cfg``'s bodies in the base frame, flattened (num_envs, 3 x bodies): AMP's foot_pos."""
    asset = env.scene[asset_cfg.name]
    data = asset.data
    root_pos, root_quat = data.root_pos_w.torch, data.root_quat_w.torch
    body_pos = data.body_pos_w.torch[:, asset_cfg.body_ids]
    rel = body_pos - root_pos.unsqueeze(1)
    quat = root_quat.unsqueeze(1).expand(-1, rel.shape[1], -1)
    return quat_apply_inverse(quat.reshape(-1, 4), rel.reshape(-1, 3)).reshape(env.num_envs, -1)
