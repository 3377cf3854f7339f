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
    """The base is lower than ``min_height`` m above the ground beneath it (world z on a flat floor)."""
    base = env.state.base_pos
    if env.terrain is None:
        return base[:, 2] < min_height
    return base[:, 2] - env.ground_height(base[:, :2]) < min_height


def terrain_out_of_bounds(env, distance_buffer: float = 1.0) -> torch.Tensor:
    """The base came within ``distance_buffer`` m of the terrain's outer edge (beyond it there is no ground); never
    on a flat floor, which is unbounded."""
    if env.terrain is None:
        return torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    key = ("terrain_out_of_bounds", distance_buffer)
    half = env.term_cache.get(key)
    if half is None:  # made once: a tensor built from host values every step would wait for the GPU
        extent = env.terrain.map.extent
        if not 0 <= distance_buffer < min(extent) / 2:
            raise ValueError(f"distance_buffer={distance_buffer}: must be >= 0 and under half the terrain's size")
        half = env.term_cache[key] = torch.tensor(extent, device=env.device) / 2 - distance_buffer
    return (env.state.base_pos[:, :2].abs() > half).any(dim=1)


def terrain_tile_crossed(env, fraction: float = 0.5) -> torch.Tensor:
    """The base walked farther than ``fraction`` of a tile from where its episode began: what the terrain curriculum
    (``terrain_levels``, its ``move_up_fraction``) promotes at the episode's end. Declared with ``time_out: true`` it
    ends such an episode at once, so a walker moves up as soon as it has earned it and its next episode starts on the
    harder tile (the curriculum then judges a good walker every few seconds, not every episode length); never on a
    flat floor."""
    if env.terrain is None:
        return torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    if not fraction > 0:
        raise ValueError(f"fraction={fraction}: must be > 0 (a share of the tile's size)")
    walked = (env.state.base_pos[:, :2] - env.episode_start_xy).norm(dim=1)
    return walked > env.terrain.map.tile_size[0] * fraction
