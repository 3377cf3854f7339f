"""The rough terrain on both embedded backends: MuJoCo Warp (here on warp's CPU device) against MuJoCo C on each
terrain type, and MuJoCo Warp's fixed contact buffers overflowing without a crash or silently wrong physics.

On a height field the two implementations keep different contact sets: MuJoCo C one contact per height-field prism
a geom touches (up to 50 per geom pair), MuJoCo Warp at most 4 per pair. With the Newton solve converged they still
stand the robot on the same ground: from the same state, every foot of every env lands together and the
trajectories stay within 2 cm over 15 control steps on flat, random rough, sloped and obstacle tiles (measured:
1.1 cm at most; on a plane the same comparison agrees to 5e-7 m, tests/test_gpu_backends.py). The stairs are box
geoms, whose contacts both compute in closed form: 1e-4 m apart (on the height field they were 6.6 cm apart after
15 steps, a riser there being a ramp across one cell). A height field or a box put in the wrong place, turned or
transposed in either backend fails this by decimetres.
"""

from __future__ import annotations

import os
import warnings

import mujoco
import pytest
import torch

from conftest import go2_servo_robot
from robolab.assets import load_robot
from robolab.envs import VelocityEnv
from robolab.envs.mdp.observations import foot_clearance, height_scan
from robolab.envs.mdp.rewards import feet_clearance
from robolab.tasks.velocity.go2.env_cfgs import Go2RoughEnvCfg, go2_robot_cfg
from robolab.terrains import generate
from robolab.terrains.field import TerrainField
from test_terrain import small_terrain

pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")
TYPES = 7


@pytest.fixture(scope="module")
def terrain():
    return generate(small_terrain())


def test_each_terrain_type_gives_the_same_trajectory_on_mujoco_c_and_mujoco_warp(terrain):
    from robolab.envs.backends.mujoco_backend import MujocoBackend
    from robolab.envs.backends.warp_backend import WarpBackend

    pair = []
    for name in ("mujoco", "warp"):
        robot = load_robot(go2_servo_robot(), timestep=0.005, terrain=terrain)
        robot.model.opt.iterations, robot.model.opt.ls_iterations, robot.model.opt.tolerance = 100, 50, 1e-10
        pair.append(MujocoBackend(robot, TYPES, 1) if name == "mujoco" else WarpBackend(robot, TYPES, DEVICE))
    c, ours = pair
    # env i stands on the middle row's tile of type i, 0.9 m out of its centre (on the steps, the boxes, the rough
    # ground; on the slopes' 2 m platform)
    field = TerrainField(terrain, TYPES, torch.device("cpu"), torch.Generator().manual_seed(0), 0)
    xy = torch.as_tensor(terrain.tile_origins[1, :, :2]) + torch.tensor([0.9, 0.0])
    qpos = torch.tensor(c.robot.model.key_qpos[0], dtype=torch.float32).repeat(TYPES, 1)
    qpos[:, :2], qpos[:, 2] = xy, field.height_at(xy) + 0.40
    for backend in pair:
        backend.reset(torch.ones(TYPES, dtype=torch.bool), qpos, torch.zeros(TYPES, backend.robot.model.nv))
    g = torch.Generator().manual_seed(0)
    default = torch.tensor(go2_robot_cfg().default_joint_pos)
    boxes = (robot.model.geom_bodyid == 0) & (robot.model.geom_type == mujoco.mjtGeom.mjGEOM_BOX)
    assert boxes.sum() == len(terrain.boxes) > 0, "the stairs should stand on box geoms"
    for _ in range(15):
        targets = default + 0.05 * torch.randn(TYPES, 12, generator=g)
        c.step(targets, 4)
        ours.step(targets, 4)
        torch.testing.assert_close(ours.qpos.cpu(), c.qpos, atol=0.02, rtol=0)
        on_ground = ours.contact_forces("foot").cpu() > 1.0, c.contact_forces("foot") > 1.0
        assert torch.equal(*on_ground)
    assert all(feet.all() for feet in on_ground), "every foot should stand on the terrain by the end, on both"
    assert not ours.overflow_flags.any()  # the buffers sized from terrain and robot held every contact


@pytest.mark.parametrize("setting, value", [("nconmax", 2), ("njmax", 8)])
def test_an_overflowing_buffer_resets_and_counts_its_envs_and_training_goes_on(setting, value):
    cfg = Go2RoughEnvCfg(num_envs=4, terrain=small_terrain(), device=DEVICE)
    cfg.backend.name = "warp"
    setattr(cfg.backend, setting, value)
    cfg.divergence.check_every = 10
    env = VelocityEnv(cfg)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(20):
            obs, rewards, dones, extras = env.step(torch.zeros(4, 12))
            assert torch.isfinite(rewards).all() and torch.isfinite(obs["policy"]).all()
    total = int(env.divergence.overflow_total)
    assert total > 0
    assert float(extras["log"]["Metrics/overflow_total"]) == total or dones.sum() == 0
    lines = [str(w.message) for w in caught if "overflowed" in str(w.message)]
    assert lines, "an overflow is reported"
    assert f"raise env.backend.{setting}" in lines[0] and f"{setting}={value}" in lines[0] and "\n" not in lines[0]
    assert int(env.divergence.diverged_total) == 0  # an overflow is no divergence: it never stops training


def test_the_rough_mdp_sees_the_same_observations_and_rewards_on_both_backends():
    # The robot starts 0.42 m up: the first control steps (before the feet land) run the same physics on both, so the
    # rough terms (height scan, base height above the ground, out-of-terrain) are compared through the env itself.
    envs = []
    for name in ("mujoco", "warp"):
        cfg = Go2RoughEnvCfg(num_envs=TYPES, terrain=small_terrain(), seed=5, device=DEVICE)
        cfg.backend.name, cfg.backend.num_threads = name, 1
        envs.append(VelocityEnv(cfg))
    c, ours = envs
    torch.testing.assert_close(ours.terrain.levels.cpu(), c.terrain.levels.cpu())
    torch.testing.assert_close(
        ours.get_observations()["critic"].cpu(), c.get_observations()["critic"].cpu(), atol=1e-4, rtol=0
    )
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        actions = 0.1 * torch.randn(TYPES, 12, generator=g)
        (o0, r0, d0, _), (o1, r1, d1, _) = (env.step(actions) for env in envs)
        for group in ("policy", "critic"):
            torch.testing.assert_close(o1[group].cpu(), o0[group].cpu(), atol=1e-3, rtol=0)
        torch.testing.assert_close(r1.cpu(), r0.cpu(), atol=1e-3, rtol=0)
        assert torch.equal(d0.cpu(), d1.cpu())
        # terms no rough task uses by default: each foot over the ground beneath it, and the swing it prices
        torch.testing.assert_close(foot_clearance(ours).cpu(), foot_clearance(c).cpu(), atol=1e-3, rtol=0)
        torch.testing.assert_close(feet_clearance(ours, 0.12).cpu(), feet_clearance(c, 0.12).cpu(), atol=1e-3, rtol=0)


@pytest.mark.parametrize("scene", ["generated terrain", "a user's mesh"])
def test_both_backends_cast_the_same_rays(terrain, scene):
    from robolab.envs.backends.mujoco_backend import MujocoBackend
    from robolab.envs.backends.warp_backend import WarpBackend

    if scene == "a user's mesh":
        cfg = go2_robot_cfg()
        cfg.builder = "test_ray_scan:go2_beside_a_ramp"
        robot, centre = load_robot(cfg), torch.tensor([2.0, 0.0])
    else:
        robot, centre = load_robot(go2_servo_robot(), terrain=terrain), torch.tensor(terrain.origin) + 6.0
    n, rays = 16, 187
    g = torch.Generator().manual_seed(2)
    origins = torch.cat([centre + torch.rand(n, 2, generator=g) * 4 - 2, torch.full((n, 1), 20.5)], dim=1)
    lean = torch.randn(n, rays, 3, generator=g) * 0.05
    directions = torch.nn.functional.normalize(lean - torch.tensor([0.0, 0.0, 1.0]), dim=-1)
    directions[:, -1] = torch.tensor([0.0, 0.0, 1.0])  # up: meets nothing
    c = MujocoBackend(robot, n, 2).cast_rays(origins, directions, 40.0)
    ours = WarpBackend(robot, n, DEVICE).cast_rays(origins.to(DEVICE), directions.to(DEVICE), 40.0).cpu()
    assert torch.isinf(c[:, -1]).all() and torch.isinf(ours[:, -1]).all()
    torch.testing.assert_close(ours[:, :-1], c[:, :-1], atol=2e-4, rtol=0)  # float32 over 20 m on the GPU's side
    met = c[:, :-1]
    assert met.max() < 40.0 and met.max() - met.min() > 0.1  # they met the ground, and not one flat plane


def test_a_height_scan_by_rays_reads_the_same_on_both_backends():
    from test_ray_scan import scanning_env

    cfg = go2_robot_cfg()
    cfg.builder = "test_ray_scan:go2_beside_a_ramp"
    scans = []
    for name in ("mujoco", "warp"):
        env = scanning_env(4, cfg, method="rays", backend=name, device=DEVICE)
        env.state.base_pos[:, 0] += torch.tensor([0.0, 1.5, 2.0, 2.5], device=env.device)  # onto the ramp
        scans.append(height_scan(env, method="rays").cpu())
    torch.testing.assert_close(scans[1], scans[0], atol=2e-4, rtol=0)
    assert (scans[0][1:] < scans[0][0].max() - 0.1).any()  # the ramp is under the last three


def test_a_humanoid_far_from_the_terrains_centre_stays_on_the_ground_on_mujoco_warp():
    """The default-size terrain (86 x 166 m): as one height field, MuJoCo Warp made contacts metres deep under the
    G1's feet tens of metres from its centre and threw it into the air (under random actions 34 of 144 episodes
    ended diverged on the flat tiles alone); in tile-sized pieces, none do."""
    from robolab.tasks.velocity.g1.env_cfgs import G1RoughEnvCfg
    from robolab.terrains.config import rough_terrain_types

    cfg = G1RoughEnvCfg(num_envs=24, seed=3, device=DEVICE)
    cfg.backend.name = "warp"
    cfg.terrain.max_init_level = 9  # spread over every row and column: as far from the centre as envs get
    cfg.terrain.types = {"flat": rough_terrain_types()["flat"]}
    env = VelocityEnv(cfg)
    try:
        assert env.env_origins[:, :2].abs().max() > 30.0
        g = torch.Generator().manual_seed(0)
        for _ in range(60):
            env.step(torch.randn(cfg.num_envs, env.num_actions, generator=g))
        assert int(env.divergence.diverged_total) == 0
    finally:
        env.close()
