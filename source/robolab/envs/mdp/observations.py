"""Observation terms: ``func(env, **params) -> (num_envs, width)``."""

from __future__ import annotations

import torch

from robolab.amp.features import amp_features, check_terms
from robolab.envs.math import quat_rotate
from robolab.envs.mdp import kernels


def base_lin_vel(env) -> torch.Tensor:
    """Base linear velocity in the base frame (m/s)."""
    return env.state.base_lin_vel


def base_ang_vel(env) -> torch.Tensor:
    """Base angular velocity in the base frame (rad/s)."""
    return env.state.base_ang_vel


def projected_gravity(env) -> torch.Tensor:
    """Gravity's direction in the base frame."""
    return env.state.projected_gravity


def generated_commands(env, command_name: str = "base_velocity") -> torch.Tensor:
    """The command term ``command_name``'s current command."""
    return env.command(command_name)


def joint_pos_rel(env) -> torch.Tensor:
    """Joint positions relative to the default pose, policy order (rad)."""
    return env.state.joint_pos - env.default_joint_pos


def joint_vel(env) -> torch.Tensor:
    """Joint velocities, policy order (rad/s)."""
    return env.state.joint_vel


def last_action(env) -> torch.Tensor:
    """The action of the previous step (zeros at an episode's start)."""
    return env.last_actions


def physics_param(env, name: str) -> torch.Tensor:
    """A value a startup or reset event drew for each env (``env.physics_params[name]``: friction, added mass ...),
    one column per value."""
    if name not in env.physics_params:
        drawn = ", ".join(env.physics_params) or "none"
        raise ValueError(f"name={name!r}: no event records it (recorded: {drawn})")
    value = env.physics_params[name]
    return value[:, None] if value.dim() == 1 else value


def foot_contact(env) -> torch.Tensor:
    """1 where a foot touches the ground (contact force above ``env.contact_force_threshold``), else 0."""
    return env.foot_contact.float()


def foot_clearance(env) -> torch.Tensor:
    """(num_envs, feet): each foot body's height (m) above the ground beneath it (the terrain's height map, or the
    flat floor's 0): the foot in the world from its base-frame position and the base's pose."""
    state = env.state
    feet_b = torch.nan_to_num(env.backend.foot_positions)
    quat = state.base_quat[:, None, :].expand(-1, feet_b.shape[1], -1)
    feet_w = state.base_pos[:, None, :] + quat_rotate(quat, feet_b)
    return feet_w[..., 2] - env.ground_height(feet_w[..., :2])


def scan_pattern(env, size: tuple[float, float], resolution: float) -> torch.Tensor:
    """(points, 2) offsets of a grid ``size`` metres (x, y) at ``resolution`` m, centred on 0, x slowest."""
    key = ("scan_pattern", tuple(size), resolution)
    pattern = env.term_cache.get(key)
    if pattern is None:
        if resolution <= 0:
            raise ValueError(f"resolution={resolution}: must be > 0 m")
        if len(size) != 2 or min(size) < 0:
            raise ValueError(f"size={list(size)}: expected [x, y], two lengths >= 0 m")
        terrain = env.terrain
        if terrain is not None:
            extent = terrain.map.extent
            if size[0] >= extent[0] or size[1] >= extent[1]:
                raise ValueError(
                    f"size={list(size)}: the scan is larger than the terrain ({extent[0]:g} x {extent[1]:g} m)"
                )
        xs = torch.arange(round(size[0] / resolution) + 1, device=env.device) * resolution - size[0] / 2
        ys = torch.arange(round(size[1] / resolution) + 1, device=env.device) * resolution - size[1] / 2
        pattern = env.term_cache[key] = torch.cartesian_prod(xs, ys).float()
    return pattern


def scan_points(env, size: tuple[float, float], resolution: float) -> torch.Tensor:
    """(num_envs, points, 2) world xy of the scan grid, turned with the base's yaw (not its roll or pitch: the scan
    looks straight down), centred on the base."""
    pattern = scan_pattern(env, size, resolution)
    q = env.state.base_quat
    w, x, y, z = q.unbind(-1)
    heading = torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    cos, sin = heading.cos()[:, None], heading.sin()[:, None]
    px, py = pattern[:, 0], pattern[:, 1]
    base = env.state.base_pos
    return torch.stack([base[:, :1] + cos * px - sin * py, base[:, 1:2] + sin * px + cos * py], dim=-1)


SCAN_METHODS = ("auto", "height_map", "rays")


def height_scan(
    env,
    size: tuple[float, float] = (1.6, 1.0),
    resolution: float = 0.1,
    offset: float = 0.5,
    method: str = "auto",
    ray_height: float = 20.0,
) -> torch.Tensor:
    """Base height above the ground at each point of a grid around the base, minus ``offset`` (Isaac Lab's
    convention: about 0 under a standing robot), (num_envs, points), on the device.

    ``method`` says where the ground comes from: ``"height_map"``, the generated terrain's height map (exact, the
    cheapest; without a generated terrain, the model's floor at height 0); ``"rays"``, rays cast into the model's
    static geometry (any scene: a user's terrain mesh; ``ray_ground_height``); ``"auto"``, the height map where
    robolab generated the terrain, rays elsewhere."""
    points = scan_points(env, size, resolution)
    if scan_method(env, method) == "rays":
        ground = ray_ground_height(env, points, ray_height)
    else:
        ground = env.ground_height(points)
    return env.state.base_pos[:, 2:3] - ground - offset


def scan_method(env, method: str) -> str:
    """``method`` resolved: ``"height_map"`` or ``"rays"``."""
    if method not in SCAN_METHODS:
        raise ValueError(f"method={method!r}: expected one of {', '.join(map(repr, SCAN_METHODS))}")
    if method == "auto":
        return "height_map" if env.terrain is not None else "rays"
    return method


def ray_ground_height(env, points: torch.Tensor, ray_height: float) -> torch.Tensor:
    """Ground height (m) at world ``points`` (num_envs, points, 2) by ray casting, (num_envs, points).

    Each env's rays start ``ray_height`` m above its base and pass through the points at the base's height (one
    origin per env: MuJoCo C's ``mj_multiRay``; MuJoCo Warp casts the same rays). They lean off the vertical by at
    most atan(r / ray_height) for a point r m from the base, so ground d m below the base is read d r / ray_height
    m from its point (1.6 cm for r = 0.94 m, d = 0.35 m at the default 20 m): well inside a 0.1 m grid. A ray that
    meets nothing within 2 ray_height reads as ground that far along it (a drop, which the task's clip bounds)."""
    if ray_height <= 0:
        raise ValueError(f"ray_height={ray_height}: must be > 0 m (the rays start that far above the base)")
    base = env.state.base_pos
    origins = base + torch.tensor([0.0, 0.0, ray_height], device=base.device)
    through = torch.cat([points, base[:, None, 2:3].expand(-1, points.shape[1], 1)], dim=-1)
    directions = torch.nn.functional.normalize(through - origins[:, None, :], dim=-1)
    reach = 2.0 * ray_height
    distance = env.backend.cast_rays(origins, directions, reach).clamp(max=reach)
    return origins[:, None, 2] + distance * directions[..., 2]


def amp_state(env, terms: list[str]) -> torch.Tensor:
    """The AMP discriminator's state features (``robolab.amp.features``: the clips are built from the same)."""
    check_terms(terms)
    s = env.state
    return amp_features(
        terms,
        joint_pos=s.joint_pos,
        joint_vel=s.joint_vel,
        base_lin_vel=s.base_lin_vel,
        base_ang_vel=s.base_ang_vel,
        foot_pos=torch.nan_to_num(env.backend.foot_positions),
    )


def imu_ang_vel(env) -> torch.Tensor:
    """The base's angular velocity as its IMU's gyro reads it: plus the episode's bias (``randomize_imu_bias``; none
    without that event)."""
    bias = env.physics_params.get("imu_gyro_bias")
    return env.state.base_ang_vel if bias is None else env.state.base_ang_vel + bias


def imu_projected_gravity(env) -> torch.Tensor:
    """Gravity's direction in the frame of an IMU mounted tilted by the episode's roll and pitch
    (``randomize_imu_bias``; the base frame without that event)."""
    tilt = env.physics_params.get("imu_tilt")
    gravity = env.state.projected_gravity
    if tilt is None:
        return gravity
    return kernels.rotate_by_roll_pitch(gravity, tilt[:, 0], tilt[:, 1])
