"""Event terms: ``func(env, mask, **params)``, for the envs of ``mask`` (startup: all of them).

Randomness comes from ``env.uniform`` (the env's seeded generator): the same seed draws the same values. Draws are
made for every env and kept where ``mask`` holds, so an event never asks the GPU which envs it concerns.
"""

from __future__ import annotations

import torch

from robolab.envs.math import quat_rotate, yaw_quat
from robolab.envs.terms import check_int_range, check_range


def randomize_friction(env, mask: torch.Tensor, friction_range: tuple[float, float], per_foot: bool = False) -> None:
    """Startup: the sliding friction of ground and robot contacts, one draw per physics variant
    (``env.backend.num_variants``); recorded per env as ``physics_params['friction']``. With ``per_foot``, each foot
    draws its own as well (recorded as ``foot_friction``, one column per foot): the ground's is set to 0, and MuJoCo
    takes the larger of two geoms' coefficients, so a foot meets the ground with its own and every other part of
    the robot with the variant's."""
    low, high = check_range("friction_range", friction_range, low_bound=0.0)
    variants = env.backend.num_variants
    friction = env.uniform(low, high, variants)
    env.physics_params["friction"] = env.backend.per_env(friction)
    if not per_foot:
        env.backend.set_friction(friction)
        return
    robot = env.robot
    feet = env.uniform(low, high, variants, len(robot.foot_body_ids))
    body = torch.as_tensor(robot.model.geom_bodyid, dtype=torch.long)
    coefficient = friction.cpu()[:, None].expand(-1, robot.model.ngeom).clone()
    coefficient[:, body == 0] = 0.0  # the ground (and the scene's static geoms)
    for column, foot in enumerate(robot.foot_body_ids):
        coefficient[:, body == int(foot)] = feet.cpu()[:, column : column + 1]
    env.backend.set_friction(coefficient)
    env.physics_params["foot_friction"] = env.backend.per_env(feet)


def randomize_base_mass(env, mask: torch.Tensor, mass_range: tuple[float, float]) -> None:
    """Startup: kg added to the base body, one draw per physics variant; recorded as
    ``physics_params['added_base_mass']``. A range that would leave the base under a tenth of its mass is refused
    (the inertia would be near singular)."""
    low, high = check_range("mass_range", mass_range)
    robot = env.robot
    nominal = float(robot.model.body_mass[robot.base_body_id])
    if nominal + low < 0.1 * nominal:
        raise ValueError(
            f"mass_range={[low, high]} would make the base body {env.cfg.robot.base_body!r} ({nominal:.3g} kg) weigh "
            f"{nominal + low:.3g} kg; keep the low end above {-0.9 * nominal:.3g}"
        )
    added = env.uniform(low, high, env.backend.num_variants)
    env.backend.set_added_base_mass(added)
    env.physics_params["added_base_mass"] = env.backend.per_env(added)


def reset_robot_state(
    env,
    mask: torch.Tensor,
    yaw_range: tuple[float, float],
    joint_pos_scale: tuple[float, float],
    base_velocity: float,
    position_range: float = 0.0,
    footprint: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Reset: the base ``robot.init_base_height`` above the env's origin (its terrain tile's centre; the world origin
    on a flat floor), shifted by up to ``position_range`` m in x and y, with a yaw from ``yaw_range``; the default
    joint pose scaled per joint by a factor from ``joint_pos_scale`` (clamped to the joint ranges); base linear and
    angular velocities uniform in [-base_velocity, base_velocity]. On a terrain the height is taken above the highest
    ground within ``footprint`` (x, y metres, centred on the base), so no foot starts inside a bump or a step (a foot
    that starts inside the ground is thrown out of it)."""
    yaw_lo, yaw_hi = check_range("yaw_range", yaw_range)
    scale_lo, scale_hi = check_range("joint_pos_scale", joint_pos_scale)
    if base_velocity < 0:
        raise ValueError(f"base_velocity={base_velocity}: a half-width, must be >= 0")
    if position_range < 0:
        raise ValueError(f"position_range={position_range}: a half-width, must be >= 0")
    n, model = env.num_envs, env.robot.model
    qpos = torch.zeros(n, model.nq, device=env.device)
    if env.terrain is None and position_range == 0:  # every env at the flat floor's origin: nothing per env
        qpos[:, 2] = env.cfg.robot.init_base_height
    else:
        xy = env.env_origins[:, :2]
        if position_range > 0:
            xy = xy + env.uniform(-position_range, position_range, n, 2)
        qpos[:, :2] = xy
        qpos[:, 2] = _highest_ground(env, xy, footprint) + env.cfg.robot.init_base_height
    qpos[:, 3:7] = yaw_quat(env.uniform(yaw_lo, yaw_hi, n))
    scale = env.uniform(scale_lo, scale_hi, n, env.num_actions)
    qpos[:, env.qpos_adr] = torch.clamp(env.default_joint_pos * scale, env.joint_lo, env.joint_hi)
    qvel = torch.zeros(n, model.nv, device=env.device)
    qvel[:, :6] = env.uniform(-base_velocity, base_velocity, n, 6)
    env.backend.reset(mask, qpos, qvel)


def _highest_ground(env, xy: torch.Tensor, footprint: tuple[float, float]) -> torch.Tensor:
    """The highest ground under a 3 x 3 grid of points spanning ``footprint`` around each ``xy`` (yaw-free: a
    square that holds the footprint in any heading)."""
    key = ("footprint", tuple(footprint))
    offsets = env.term_cache.get(key)
    if offsets is None:
        if len(footprint) != 2 or min(footprint) < 0:
            raise ValueError(f"footprint={list(footprint)}: expected [x, y], two lengths >= 0 m")
        half = max(footprint) / 2
        steps = torch.tensor([-half, 0.0, half], device=env.device)
        offsets = env.term_cache[key] = torch.cartesian_prod(steps, steps)
    return env.ground_height(xy[:, None, :] + offsets).amax(dim=1)


def push_by_setting_velocity(env, mask: torch.Tensor, velocity_range: float) -> None:
    """Interval: add a horizontal base velocity uniform in [-velocity_range, velocity_range] m/s per axis (world)."""
    if velocity_range < 0:
        raise ValueError(f"velocity_range={velocity_range}: a half-width, must be >= 0")
    push = env.uniform(-velocity_range, velocity_range, env.num_envs, 2)
    world_vel = quat_rotate(env.state.base_quat, env.state.base_lin_vel)
    env.backend.set_base_velocity(mask, world_vel[:, :2] + push)


def randomize_action_delay(env, mask: torch.Tensor, steps_range: tuple[int, int]) -> None:
    """Reset: each new episode's actions reach the motors late by a whole number of control steps drawn from
    ``steps_range`` per env and episode (a robot's bus and driver latency: Isaac Lab's ``DelayedPDActuatorCfg``,
    holosoma's action delay); recorded as ``action_delay`` (steps)."""
    low, high = check_int_range("steps_range", steps_range)
    steps = torch.randint(low, high + 1, (env.num_envs,), generator=env.generator, device=env.device)
    env.delay_actions(mask, steps, high)
    previous = env.physics_params.get("action_delay", torch.zeros(env.num_envs, device=env.device))
    env.physics_params["action_delay"] = torch.where(mask, steps.float(), previous)


def randomize_imu_bias(
    env,
    mask: torch.Tensor,
    gyro_range: tuple[float, float] = (0.0, 0.0),
    tilt_range: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Reset: each new episode's IMU is off by a constant gyro bias (rad/s, each axis from ``gyro_range``) and
    mounted tilted (roll and pitch, rad, each from ``tilt_range``): what ``imu_ang_vel`` and
    ``imu_projected_gravity`` read, a new error each episode. Recorded as ``imu_gyro_bias`` (3) and ``imu_tilt``
    (2)."""
    gyro = check_range("gyro_range", gyro_range)
    tilt = check_range("tilt_range", tilt_range)
    drawn = {"imu_gyro_bias": env.uniform(*gyro, env.num_envs, 3), "imu_tilt": env.uniform(*tilt, env.num_envs, 2)}
    for name, value in drawn.items():
        previous = env.physics_params.get(name, torch.zeros_like(value))
        env.physics_params[name] = torch.where(mask[:, None], value, previous)
