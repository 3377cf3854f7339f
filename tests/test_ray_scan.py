"""Height scans by ray casting (``height_scan``'s ``method="rays"``): they read a user's own terrain mesh, they see
the ground and never the robot, they agree with the generated terrain's exact height map, and bad settings are
one-line errors. MuJoCo Warp casting the same rays as MuJoCo C: tests/test_terrain_backends.py."""

from __future__ import annotations

import math

import mujoco
import pytest
import torch

from robolab.assets.go2 import build_go2_spec
from robolab.assets.robot_cfg import RobotCfg
from robolab.envs import VelocityEnv
from robolab.envs.mdp.observations import height_scan, scan_points
from robolab.envs.terms import ObsTermCfg, TermError
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg, go2_robot_cfg
from test_terrain import rough_env

RAMP_X, RAMP_HALF_WIDTH, RAMP_RISE = (1.0, 3.0), 1.0, 0.25
"""The mesh ramp beside the robot: from x = 1 m to 3 m, |y| < 1 m, rising 0.25 m per metre, then a vertical drop."""


def go2_beside_a_ramp(cfg: RobotCfg) -> mujoco.MjSpec:
    """The built-in Go2 on its floor with a wedge mesh in the world: a user's own terrain (robot.builder)."""
    spec = build_go2_spec(cfg)
    (x0, x1), w, top = RAMP_X, RAMP_HALF_WIDTH, RAMP_RISE * (RAMP_X[1] - RAMP_X[0])
    vertices = [x0, -w, 0, x1, -w, 0, x1, w, 0, x0, w, 0, x1, -w, top, x1, w, top]
    faces = [0, 2, 1, 0, 3, 2, 0, 1, 4, 3, 5, 2, 1, 2, 5, 1, 5, 4, 0, 4, 5, 0, 5, 3]
    spec.add_mesh(name="ramp", uservert=vertices, userface=faces)
    floor = spec.geom("floor")
    spec.worldbody.add_geom(
        name="ramp",
        type=mujoco.mjtGeom.mjGEOM_MESH,
        meshname="ramp",
        contype=floor.contype,
        conaffinity=floor.conaffinity,
        rgba=[0.6, 0.6, 0.6, 1],
    )
    return spec


def ramp_height(xy: torch.Tensor) -> torch.Tensor:
    x, y = xy[..., 0], xy[..., 1]
    on = (x >= RAMP_X[0]) & (x <= RAMP_X[1]) & (y.abs() <= RAMP_HALF_WIDTH)
    return torch.where(on, RAMP_RISE * (x - RAMP_X[0]), torch.zeros_like(x))


def scanning_env(
    num_envs: int, robot: RobotCfg | None = None, backend: str = "mujoco", device: str = "cpu", **params
) -> VelocityEnv:
    """The flat task (no generated terrain) with a height scan in its policy observations."""
    cfg = Go2FlatEnvCfg(num_envs=num_envs, device=device)
    if robot is not None:
        cfg.robot = robot
    cfg.backend.name, cfg.backend.num_threads = backend, 1
    cfg.observations["policy"].terms["height_scan"] = ObsTermCfg(func="height_scan", params=params)
    return VelocityEnv(cfg)


def place(env: VelocityEnv, xy_yaw: list[tuple[float, float, float]], height: float) -> None:
    """Put each env's base at (x, y), ``height`` m up, turned by yaw (the scan reads the state it is given)."""
    for i, (x, y, yaw) in enumerate(xy_yaw):
        env.state.base_pos[i] = torch.tensor([x, y, height])
        env.state.base_quat[i] = torch.tensor([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


def test_rays_read_a_users_terrain_mesh_where_no_terrain_was_generated():
    robot = go2_robot_cfg()
    robot.builder = "test_ray_scan:go2_beside_a_ramp"
    env = scanning_env(3, robot)  # method "auto": rays, since robolab generated no terrain here
    # on the floor; on the ramp heading along it; on the ramp turned across it
    place(env, [(-2.0, 0.0, 0.0), (1.9, 0.0, 0.0), (2.0, 0.0, math.pi / 2)], height=0.9)
    scan = height_scan(env)
    points = scan_points(env, (1.6, 1.0), 0.1)
    assert ramp_height(points[1:]).min() > 0.0  # both scans lie wholly on the ramp
    torch.testing.assert_close(scan[0], 0.9 - ramp_height(points[0]) - 0.5, atol=1e-5, rtol=0)  # on the floor
    # On the ramp, where each ray from 20 m above the base through its point at the base's height meets the slope:
    base = env.state.base_pos[1:, None, :]
    origin = base + torch.tensor([0.0, 0.0, 20.0])
    through = torch.cat([points[1:], base[..., 2:].expand(-1, 187, 1)], dim=-1)
    along = torch.nn.functional.normalize(through - origin, dim=-1)
    t = (RAMP_RISE * (origin[..., 0] - RAMP_X[0]) - origin[..., 2]) / (along[..., 2] - RAMP_RISE * along[..., 0])
    torch.testing.assert_close(scan[1:], 0.9 - (origin[..., 2] + t * along[..., 2]) - 0.5, atol=1e-4, rtol=0)
    # which is the ground under the point, give or take the rays' lean: d r / 20 m along a 0.25 rise, < 1 cm here
    assert (scan[1:] - (0.9 - ramp_height(points[1:]) - 0.5)).abs().max() < 0.01
    # the height map knows no ramp: the scan by rays is what sees it
    assert (height_scan(env, method="height_map")[1:] - scan[1:]).abs().max() > 0.3


def test_the_scan_sees_the_ground_and_never_the_robot():
    env = scanning_env(4, method="rays")
    env.get_observations()
    base = env.state.base_pos
    # the robot stands on the floor with its legs under the base: every point reads the floor at 0
    torch.testing.assert_close(height_scan(env, method="rays"), (base[:, 2:3] - 0.5).expand(-1, 187), atol=1e-5, rtol=0)
    # one ray straight down through the base's own geoms meets the floor
    down = torch.tensor([0.0, 0.0, -1.0]).expand(4, 1, 3)
    origin = base + torch.tensor([0.0, 0.0, 1.0])
    torch.testing.assert_close(env.backend.cast_rays(origin, down, 5.0)[:, 0], origin[:, 2], atol=1e-5, rtol=0)
    # a ray into the sky meets nothing
    assert torch.isinf(env.backend.cast_rays(origin, -down, 5.0)).all()


def test_rays_and_the_height_map_read_the_generated_terrain_alike():
    env = rough_env(num_envs=63)
    # three envs on each of the 3 x 7 tiles, up to 1 m out of its centre, turned at random: each scan on its tile
    g = torch.Generator().manual_seed(1)
    tiles = env.terrain.tile_origins.reshape(-1, 3).repeat_interleave(3, dim=0)
    xy = tiles[:, :2] + torch.rand(63, 2, generator=g) * 2 - 1
    yaw = torch.rand(63, generator=g) * 2 * math.pi
    env.state.base_pos[:] = torch.cat([xy, (env.ground_height(xy) + 0.34)[:, None]], dim=1)
    env.state.base_quat[:] = torch.stack([(yaw / 2).cos(), 0 * yaw, 0 * yaw, (yaw / 2).sin()], dim=1)
    exact, by_rays = height_scan(env, method="height_map"), height_scan(env, method="rays")
    gap = (exact - by_rays).abs()
    # Only near a step's edge does a ray's lean (<= 1.6 cm across) put its point on the other side of the edge.
    assert (gap < 0.01).float().mean() > 0.95
    assert gap.median() < 1e-3
    column = torch.arange(63) // 3 % env.terrain.num_cols
    flat = torch.tensor([env.terrain.type_names[c] == "flat" for c in column])
    assert flat.any()
    assert gap[flat].max() < 1e-4  # flat tiles: the same to float precision
    sloped = torch.tensor([env.terrain.type_names[c].startswith("slope") for c in column])
    # No step to cross on a slope: ground d m below the base read d r / 20 m out along the slope (here d < 0.8 m,
    # r < 0.94 m, 25 degrees: 1.7 cm at most)
    assert gap[sloped].max() < 0.02


def test_a_bad_scan_method_or_ray_height_is_a_one_line_error():
    for params, message in (
        ({"method": "lidar"}, r"params\.method='lidar': expected one of 'auto', 'height_map', 'rays'$"),
        ({"method": "rays", "ray_height": 0.0}, r"params\.ray_height=0\.0: must be > 0 m"),
    ):
        with pytest.raises(TermError, match=r"^env\.observations\.policy\.terms\.height_scan\." + message):
            scanning_env(2, **params)
