"""Judging a policy on a fixed evaluation terrain, per terrain type and difficulty (``play.py --terrain_eval``).

Every tile of the task's terrain grid (generated from ``EVAL_TERRAIN_SEED``, not the training seed) gets the same
number of envs. Each starts at its tile's centre, facing a random way, commanded at ``speed`` m/s in one direction of
its body frame (``direction``: 0 degrees straight ahead, 180 backwards, 90 to its left) with no turning, for one
episode. An env **succeeds** when its base reaches the tile's edge (half a tile from the centre along x or y)
without having fallen, within ``WAY_TOLERANCE_DEG`` of where its command pointed; it **falls** when its episode ends
by a termination other than the time limit first (``fell_by`` says which termination terms ended those episodes);
otherwise (still on the tile at the time limit, or at an edge it was not sent to) it neither succeeds nor falls. The
tracking error is averaged over the steps before an env succeeds or ends.
"""

from __future__ import annotations

import math

import torch

from robolab import console
from robolab.envs.math import heading, quat_rotate, yaw_quat

EVAL_TERRAIN_SEED = 1000
"""The evaluation terrain's seed: random tiles (rough ground, boxes) the policy did not train on."""


def terrain_eval_overrides(speed: float, direction: float = 0.0) -> list[str]:
    """The evaluation conditions on top of play's (no noise, no pushes): fixed tiles (no curriculum), a straight
    command at ``speed`` m/s towards ``direction`` degrees in the body frame (counter-clockwise from straight ahead),
    the start at the tile's centre, the evaluation terrain. A policy may climb a way it was never asked to judge (on
    one H200 the Go2 learned to climb 0.15 m stairs backwards and sideways, not forwards: docs/terrain.md), so the
    direction is the evaluation's to choose and the table's to name."""
    if not speed > 0:
        raise ValueError(f"--terrain_eval_speed={speed}: must be > 0 m/s")
    if not math.isfinite(direction):
        raise ValueError(f"--terrain_eval_direction={direction}: must be a finite angle in degrees")
    # rounded so that straight ahead is exactly (speed, 0), not (speed, 6e-17)
    vx, vy = (round(speed * f(math.radians(direction)), 6) + 0.0 for f in (math.cos, math.sin))
    command = "env.commands.base_velocity.params"
    return [
        "env.curricula.terrain_level=null",
        f"{command}.lin_vel_x=[{vx},{vx}]",
        f"{command}.lin_vel_y=[{vy},{vy}]",
        f"{command}.ang_vel_z=[0.0,0.0]",
        f"{command}.standing_fraction=0.0",
        f"{command}.heading_command=false",
        f"{command}.resampling_time_s=1.0e6",  # never within an episode
        "env.events.reset_robot.params.position_range=0.0",
        f"env.terrain.seed={EVAL_TERRAIN_SEED}",
    ]


WAY_TOLERANCE_DEG = 60.0
"""How far from its command's direction (at the episode's start, in the world) a robot may reach the tile's edge
and still succeed: a policy that climbs backwards when asked forwards reaches an edge, but not the one it was sent
to (it is counted in ``wrong_way_rate``)."""

EVAL_FRICTION = 1.0
"""The sliding friction of the evaluation (MuJoCo's default, the Go2 model's own; legged_gym's play turns friction
randomisation off too): the Go2 tasks train on draws down to 0.4, below tan(25 deg) = 0.47, where no policy can
stand on the steepest slope, so a table under the task's draws would judge the dice as much as the policy."""


def evaluate_on_terrain(env, policy, friction: float | None = EVAL_FRICTION, steps: int | None = None) -> dict:
    """One episode per env, envs spread evenly over every tile; the table ``{type: {level: {...}}}``. ``friction``
    sets every contact's sliding friction (``None`` keeps the task's own draws); ``steps`` ends the evaluation after
    that many control steps (default: the episode's length), an env still walking then counting as not reached."""
    terrain = env.terrain
    if terrain is None:
        raise ValueError("--terrain_eval: the task stands on a flat floor (env.terrain is null)")
    rows, cols = terrain.num_rows, terrain.num_cols
    tiles = rows * cols
    if env.num_envs < tiles:
        raise ValueError(f"--num_envs={env.num_envs}: the evaluation needs at least one env per tile ({tiles})")
    tile = torch.arange(env.num_envs, device=env.device) % tiles
    _judge_the_edge_here(env)
    if friction is not None:
        if not 0 < friction < float("inf"):
            raise ValueError(f"--terrain_eval_friction={friction}: must be a finite number > 0")
        env.backend.set_friction(torch.full((env.backend.num_variants,), float(friction)))
        if "friction" in env.physics_params:  # what the critic's privileged term reads
            env.physics_params["friction"] = torch.full((env.num_envs,), float(friction), device=env.device)
    terrain.levels, terrain.types = tile // cols, tile % cols
    with torch.inference_mode():
        obs = env.reset()
        origin = terrain.env_origins[:, :2].clone()
        way = _command_way_in_world(env)
        min_cos = math.cos(math.radians(WAY_TOLERANCE_DEG))
        half = torch.tensor(terrain.map.tile_size, device=env.device) / 2
        active = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        success = torch.zeros_like(active)
        wrong_way = torch.zeros_like(active)
        fell = torch.zeros_like(active)
        error_sum = torch.zeros(env.num_envs, device=env.device)
        error_steps = torch.zeros(env.num_envs, device=env.device)
        falls = [*(t.name for t in env.termination_terms if not t.cfg.time_out), "diverged"]
        fell_by = torch.zeros(env.num_envs, len(falls), dtype=torch.bool, device=env.device)
        reset_memory = getattr(policy, "reset", None)
        length = int(env.max_episode_length) if steps is None else min(steps, int(env.max_episode_length))
        for _ in console.progress_over(range(length), "terrain evaluation"):
            obs, _, dones, extras = env.step(policy(obs))
            if reset_memory is not None:
                reset_memory(dones)
            ended = dones.bool()
            error_sum += torch.where(active, env.last_tracking_error, 0.0)
            error_steps += active.float()
            fell_now = active & ended & ~extras["time_outs"].bool()
            fell |= fell_now
            fell_by |= fell_now[:, None] & torch.stack([env.terminated_by[name] for name in falls], dim=1)
            # where the base stood before any reset: an episode that a time-out term ended at the edge (the
            # terrain_tile_crossed termination) reached it
            walked = env.last_base_xy - origin
            reached = active & ~fell_now & (walked.abs() >= half).any(dim=1)
            along = (walked * way).sum(dim=1) >= min_cos * walked.norm(dim=1)
            success |= reached & along
            wrong_way |= reached & ~along
            active &= ~(reached | ended)
    error = error_sum / error_steps.clamp_min(1)
    return _table(terrain, tile, success, wrong_way, fell, error, dict(zip(falls, fell_by.T)))


def _command_way_in_world(env) -> torch.Tensor:
    """The unit direction, in the world, of each env's body-frame velocity command as its episode starts (turned by
    the base's heading only: the command is a velocity over the ground)."""
    command = torch.nn.functional.pad(env.command(env.cfg.velocity_command)[:, :2], (0, 1))
    way = quat_rotate(yaw_quat(heading(env.state.base_quat)), command)[:, :2]
    return way / way.norm(dim=1, keepdim=True).clamp_min(1e-9)


def _judge_the_edge_here(env) -> None:
    """Drop the env's ``terrain_tile_crossed`` terms: they end an episode half a tile from its start in any direction,
    before a robot walking diagonally reaches the square tile's edge, which is what this evaluation judges."""
    from robolab.envs import mdp
    from robolab.envs.terms import resolve_func

    env.termination_terms = [
        t for t in env.termination_terms if resolve_func(t.cfg.func, t.key) is not mdp.terrain_tile_crossed
    ]


def _table(terrain, tile, success, wrong_way, fell, error, fell_by: dict[str, torch.Tensor]) -> dict:
    cols = terrain.num_cols
    table: dict[str, dict] = {}
    for name in terrain.level_type_names:
        columns = [c for c, n in enumerate(terrain.type_names) if n == name]
        per_level = {}
        for level in range(terrain.num_rows):
            picked = torch.zeros_like(success)
            for c in columns:
                picked |= tile == level * cols + c
            per_level[str(level)] = {
                "difficulty": round(float(terrain.map.difficulty[level]), 3),
                "envs": int(picked.sum()),
                "success_rate": round(float(success[picked].float().mean()), 4),
                # reached an edge, but not where its command sent it (more than WAY_TOLERANCE_DEG off)
                "wrong_way_rate": round(float(wrong_way[picked].float().mean()), 4),
                "fall_rate": round(float(fell[picked].float().mean()), 4),
                "tracking_error": round(float(error[picked].mean()), 4),
                # which termination ended the falls (more than one can end the same step)
                "fell_by": {name: round(float(by[picked].float().mean()), 4) for name, by in fell_by.items()},
            }
        table[name] = per_level
    return table


def markdown(table: dict) -> str:
    """Success rates (%) by type (rows) and level (columns), as the README shows them."""
    levels = list(next(iter(table.values())))
    head = "| type | " + " | ".join(f"L{lv}" for lv in levels) + " |"
    rule = "| --- |" + " --- |" * len(levels)
    lines = [head, rule]
    for name, per_level in table.items():
        cells = [f"{100 * per_level[lv]['success_rate']:.0f}" for lv in levels]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
