"""Curriculum terms: ``func(env, mask, **params)`` for the envs starting an episode (``mask``), before the reset
events place them; they return what is logged as ``Curriculum/<name>`` (a 0-dim tensor, or a dict of them logged
as ``Curriculum/<name>/<key>``)."""

from __future__ import annotations

import torch

from robolab.envs.terms import check_range


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


def command_ranges(
    env,
    mask: torch.Tensor,
    limits: dict[str, tuple[float, float]],
    step: float = 0.1,
    error_threshold: float = 0.25,
    every_s: float | None = None,
    command_name: str = "base_velocity",
) -> dict[str, torch.Tensor]:
    """legged_gym's command curriculum: every ``every_s`` seconds (an episode's length when None), if the episodes
    that ended since tracked their commands within ``error_threshold`` m/s on average, every range in ``limits``
    (``lin_vel_x``, ``lin_vel_y``, ``ang_vel_z``) widens by ``step`` at each end, up to its limit. Judged on the
    device (no wait for the GPU); the ranges are kept in checkpoints. Logged: each range's ends."""
    command = env.command_terms.get(command_name)
    if command is None or not hasattr(command, "ranges"):
        have = ", ".join(env.command_terms)
        raise ValueError(f"command_name={command_name!r}: no velocity command of that name (have: {have})")
    if not step > 0 or not error_threshold > 0:
        raise ValueError(f"step={step}, error_threshold={error_threshold}: both must be > 0")
    key = ("command_ranges", command_name)
    state = env.term_cache.get(key)
    if state is None:
        for name, limit in limits.items():
            if name not in command.ranges:
                raise ValueError(f"limits: {name!r} is no range of the command (have: {', '.join(command.ranges)})")
            low, high = check_range(f"limits.{name}", limit)
            start_low, start_high = command.ranges[name].tolist()  # once, at the first call
            if not low <= start_low <= start_high <= high:
                start = [start_low, start_high]
                raise ValueError(f"limits.{name}={[low, high]}: must hold the command's range {start}")
        every = env.max_episode_length if every_s is None else max(1, round(every_s / env.step_dt))
        zero = torch.zeros((), device=env.device)
        # The first call is the env's first reset, before any step: the count of steps starts after it. The count is
        # a tensor, like everything a step changes (a captured step replays tensor work only).
        steps = torch.full((), -1, dtype=torch.long, device=env.device)
        state = env.term_cache[key] = {"every": every, "steps": steps, "error": zero.clone(), "count": zero.clone()}
    ended = mask & (env.episode_steps > 0)
    diverged = getattr(env, "terminated_by", {}).get("diverged")
    if diverged is not None:
        ended = ended & ~diverged
    per_episode = env.episode_tracking_error / env.episode_steps.clamp_min(1)
    state["error"] = state["error"] + (per_episode * ended).sum()
    state["count"] = state["count"] + ended.sum()
    state["steps"] = state["steps"] + 1
    due = state["steps"] % state["every"] == 0
    mean = state["error"] / state["count"].clamp_min(1)
    widen = due & (state["count"] > 0) & (mean < error_threshold)
    for name, (low, high) in limits.items():
        current = command.ranges[name]
        wider = torch.stack([(current[0] - step).clamp_min(low), (current[1] + step).clamp_max(high)])
        command.ranges[name] = torch.where(widen, wider, current)
    state["error"], state["count"] = state["error"].masked_fill(due, 0.0), state["count"].masked_fill(due, 0.0)
    log = {}
    for name in limits:
        log[f"{name}_min"], log[f"{name}_max"] = command.ranges[name].unbind()
    return log
