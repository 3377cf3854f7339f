"""Termination terms: ``func(env, **params) -> (num_envs,) bool``."""

from __future__ import annotations

import torch


def time_out(env) -> torch.Tensor:
    """The episode reached ``env.episode_length_s`` (declare it with ``time_out: true``)."""
    return env.episode_length_buf >= env.max_episode_length


def illegal_contact(env, threshold: float = 1.0, body_group: str = "termination") -> torch.Tensor:
    """A body of ``body_group`` (``RobotCfg``'s ``termination_contact_bodies``) touches with over ``threshold`` N."""
    return (env.backend.contact_forces(body_group) > threshold).any(dim=1)


def base_height_below(env, min_height: float) -> torch.Tensor:
    """The base is lower than ``min_height`` m (world z)."""
    return env.state.base_pos[:, 2] < min_height
