"""Curriculum terms: ``func(env, mask, **params)`` for the envs starting an episode (``mask``), before the reset
events place them; they return what is logged as ``Curriculum/<name>`` (a 0-dim tensor, or a dict of them logged
as ``Curriculum/<name>/<key>``)."""

from __future__ import annotations

import torch


def terrain_levels(
    env,
    mask: torch.Tensor,
    move_up_fraction: float = 0.5,
    move_down_fraction: float = 0.5,
    command_name: str = "base_velocity",
) -> dict[str, torch.Tensor] | None:
    """legged_gym's and Isaac Lab's terrain curriculum. An env whose episode ends having walked farther than
    ``move_up_fraction`` of a tile from its start moves one level up; one that walked less than
    ``move_down_fraction`` of the distance its command asked for (speed x the time its episode was given) moves one
    down; one that solves the top level goes to a random level. Each env moves on its own (on every rank); the
    logged values are the mean level, overall and per terrain type, which the logger averages over ranks."""
    terrain = env.terrain
    if terrain is None:
        return None
    if not (move_up_fraction > 0 and move_down_fraction >= 0):
        raise ValueError(f"move_up_fraction={move_up_fraction}, move_down_fraction={move_down_fraction}: must be > 0")
    ended = mask & (env.episode_steps > 0)  # an env that ran no step (the first reset) has walked nothing
    # A diverged env's position is the garbage that ended it (far off, or NaN): it is judged neither way.
    diverged = getattr(env, "terminated_by", {}).get("diverged")
    if diverged is not None:
        ended = ended & ~diverged
    # From where the episode began, not from the tile's centre: after a resume restored the levels, an env's first
    # episode runs on the tile it was placed on before, and the restored level's centre can be rows away.
    walked = (env.state.base_pos[:, :2] - env.episode_start_xy).norm(dim=1)
    # The time the episode was given: all of it, except for an episode that a new run started part-way through
    # (rsl_rl's init_at_random_ep_len), which is judged on what was left of it.
    started_at = env.episode_length_buf - env.episode_steps
    given_s = (env.max_episode_length - started_at).clamp_min(0) * env.step_dt
    asked = env.command(command_name)[:, :2].norm(dim=1) * given_s
    up = walked > terrain.map.tile_size[0] * move_up_fraction
    down = (walked < asked * move_down_fraction) & ~up
    levels = terrain.levels + (ended & up).long() - (ended & down).long()
    solved = levels >= terrain.num_rows
    random_level = torch.randint(0, terrain.num_rows, levels.shape, generator=env.generator, device=env.device)
    terrain.levels = torch.where(solved, random_level, levels.clamp_min(0))
    means = terrain.mean_level_by_type()
    log = {"": terrain.levels.float().mean()}
    log.update(zip(terrain.level_type_names, means.unbind()))
    return log
