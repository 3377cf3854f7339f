"""The generated terrain: the same seed gives the same bytes, the heights the env reads are the ground MuJoCo
stands on, every tile type has the shape its parameters ask for, bad settings are one-line errors, the curriculum
moves envs up and down, and its levels survive a checkpoint (one rank and two)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import mujoco
import numpy as np
import pytest
import torch

from conftest import TINY, clean_env, run, train_cmd
from robolab import checkpoint
from robolab.assets import load_robot
from robolab.envs import VelocityEnv
from robolab.envs.mdp import kernels
from robolab.envs.terms import TermError, TerminationTermCfg
from robolab.envs.velocity_env_cfg import VelocityEnvCfg
from robolab.launch import TrainOptions
from robolab.tasks.velocity.go2.env_cfgs import Go2RoughEnvCfg, go2_robot_cfg
from robolab.terrains import TerrainCfg, TerrainTypeCfg, generate
from robolab.terrains.boxes import BOX_CLEARANCE
from robolab.terrains.field import TerrainField

SMALL = {"num_rows": 3, "num_cols": 7, "tile_size": (4.0, 4.0), "border_width": 1.0}
"""A terrain with every default type, small enough to build in a blink (the tests' and CI's rough runs); its
stairs fit a 4 m tile (a 1.5 m platform, 0.5 m borders: 3 steps a flight)."""
SMALL_STAIRS = {"platform_width": 1.5, "border_width": 0.5}
SMALL_OVERRIDES = [
    "env.terrain.num_rows=3",
    "env.terrain.num_cols=7",
    "env.terrain.tile_size=[4.0,4.0]",
    "env.terrain.border_width=1.0",
    *(f"env.terrain.types.{t}.params.{k}={v}" for t in ("stairs_up", "stairs_down") for k, v in SMALL_STAIRS.items()),
]


def small_terrain(**changes) -> TerrainCfg:
    cfg = TerrainCfg(**SMALL)
    for name in ("stairs_up", "stairs_down"):
        cfg.types[name].params.update(SMALL_STAIRS)
    return dataclasses.replace(cfg, **changes)


def test_the_same_seed_gives_the_same_terrain_byte_for_byte_and_another_seed_another():
    first, again, other = generate(small_terrain()), generate(small_terrain()), generate(small_terrain(seed=1))
    assert first.heights.tobytes() == again.heights.tobytes()
    assert first.tile_origins.tobytes() == again.tile_origins.tobytes()
    assert first.boxes.tobytes() == again.boxes.tobytes() and len(first.boxes) > 0
    assert first.field_heights.tobytes() == again.field_heights.tobytes()
    assert first.heights.tobytes() != other.heights.tobytes()  # the random types differ
    assert first.type_names == ["flat", "random_rough", "slope_up", "slope_down", "stairs_up", "stairs_down", "boxes"]


@pytest.mark.parametrize("seed", [0, 7])
def test_heights_on_the_device_are_the_ground_mujoco_stands_on(seed):
    terrain = generate(small_terrain(seed=seed))
    robot = load_robot(go2_robot_cfg(), terrain=terrain)
    data = mujoco.MjData(robot.model)
    mujoco.mj_forward(robot.model, data)
    rng = np.random.default_rng(seed)
    x0, y0 = terrain.origin
    ex, ey = terrain.extent
    points = np.stack([rng.uniform(x0, x0 + ex, 300), rng.uniform(y0, y0 + ey, 300)], axis=1)
    geom = np.zeros(1, dtype=np.int32)
    top = 10.0
    ray = [
        top - mujoco.mj_ray(robot.model, data, np.array([x, y, top]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
        for x, y in points
    ]
    field = TerrainField(terrain, 4, torch.device("cpu"), torch.Generator().manual_seed(0), 0)
    ours = field.height_at(torch.tensor(points, dtype=torch.float32))
    np.testing.assert_allclose(ours.numpy(), np.array(ray), atol=2e-5)


def test_each_type_has_the_shape_its_parameters_ask_for():
    cfg = dataclasses.replace(TerrainCfg(**SMALL), tile_size=(8.0, 8.0))  # the default tiles and types: 5 steps
    # a flight, between a 1 m border and a 3 m platform
    terrain = generate(cfg)
    h, half = terrain.spacing, cfg.tile_size[0] / 2
    field = TerrainField(terrain, 7, torch.device("cpu"), torch.Generator().manual_seed(0), 0)
    top = terrain.tile_origins[-1]  # the hardest row: difficulty 1

    def profile(col: int, offsets) -> np.ndarray:
        xy = torch.tensor([[top[col, 0] + d, top[col, 1]] for d in offsets], dtype=torch.float32)
        return field.height_at(xy).numpy()

    names = terrain.type_names
    # stairs up: walking out of the centre, each 0.3 m ring is one 0.20 m step higher
    stairs = profile(names.index("stairs_up"), [1.75, 2.05, 2.35])  # mid-tread of rings 7, 6, 5 from the edge
    outer = profile(names.index("stairs_up"), [half - 1e-4, half - 0.03])
    np.testing.assert_allclose(np.diff(stairs), [0.20, 0.20], atol=1e-5)
    assert outer[0] == pytest.approx(0.0, abs=1e-5)  # tiles meet at height 0
    # the outer half-sample of a box tile is height field, sunk by at most BOX_CLEARANCE towards the boxes
    assert -BOX_CLEARANCE <= outer[1] < 0
    # Isaac Lab's flights: level along the 1 m border, then 5 risers up to the platform, and level again
    flight = profile(names.index("stairs_up"), -np.arange(0.0, half, 0.1))  # centre to edge, at the height samples
    risers = np.flatnonzero(np.abs(np.diff(flight)) > 1e-5)
    assert len(risers) == 5 and np.allclose(np.diff(flight)[risers], 0.20, atol=1e-5)
    assert np.ptp(flight[-10:]) < 1e-5 and np.ptp(flight[:16]) < 1e-5  # the border and the 3 m platform
    stairs_down = profile(names.index("stairs_down"), [1.75, 2.05])
    assert np.diff(stairs_down)[0] == pytest.approx(-0.20, abs=1e-5)
    # slopes: 25 degrees at the hardest row, rising (up) or falling (down) away from the centre
    for name, sign in (("slope_up", 1.0), ("slope_down", -1.0)):
        a, b = profile(names.index(name), [1.2, 1.7])
        assert math.degrees(math.atan2(sign * (b - a), 0.5)) == pytest.approx(25.0, abs=0.1)
    # every tile starts the robot on level ground at its centre
    for col in range(7):
        ring = profile(col, [-0.3, 0.0, 0.3])
        if names[col] != "random_rough":
            np.testing.assert_allclose(ring, ring[1], atol=1e-5)
    # random rough: bumps within the hardest row's amplitude (0.10 m); flat: flat
    rough = profile(names.index("random_rough"), np.linspace(-half + h, half - h, 50))
    assert 0.02 < rough.max() - rough.min() <= 0.10 + 1e-5
    assert profile(names.index("flat"), [-1.0, 0.0, 1.5]).tolist() == [0.0, 0.0, 0.0]


def test_stairs_stand_on_boxes_with_vertical_risers_at_the_heights_the_scan_reads():
    cfg = dataclasses.replace(TerrainCfg(**SMALL), tile_size=(8.0, 8.0))  # the default tiles: 5 steps a flight
    terrain = generate(cfg)
    stairs_cols = [c for c, n in enumerate(terrain.type_names) if n.startswith("stairs")]
    # down from a platform: 6 stacked squares a tile (the border's level and 5 steps); up out of a pit: 5 rings of 4
    # boxes and the pit's floor
    assert len(terrain.boxes) == (6 + 21) * cfg.num_rows
    robot = load_robot(go2_robot_cfg(), terrain=terrain)
    data = mujoco.MjData(robot.model)
    mujoco.mj_forward(robot.model, data)
    field = TerrainField(terrain, 4, torch.device("cpu"), torch.Generator().manual_seed(0), 0)

    def ray_height(x: float, y: float) -> float:
        top, down = 10.0, np.array([0.0, 0.0, -1.0])
        return top - mujoco.mj_ray(robot.model, data, np.array([x, y, top]), down, None, 1, -1, None)

    h = terrain.spacing
    for col in stairs_cols:
        cx, cy, _ = terrain.tile_origins[-1, col]  # 0.20 m steps
        # across the flight from the centre to the edge, 7 points a sample: the boxes are the ground the map reads
        points = [(cx + d, cy + 0.37) for d in np.arange(0.0, 3.99, h / 7)]
        ours = field.height_at(torch.tensor(points, dtype=torch.float32)).numpy()
        np.testing.assert_allclose(ours, [ray_height(x, y) for x, y in points], atol=1e-5)
        # each riser is vertical: 0.20 m within 2 mm, half a sample from a height sample
        risers = [(a, b) for a, b in itertools.pairwise(ours) if abs(b - a) > 0.01]
        assert len(risers) == 5 and all(abs(abs(b - a) - 0.20) < 1e-5 for a, b in risers)
        riser_x = cx + 1.5 + h / 2  # the first riser out of the 3 m platform, between the samples at 1.5 and 1.6 m
        step = ray_height(riser_x + 0.001, cy) - ray_height(riser_x - 0.001, cy)
        assert abs(step) == pytest.approx(0.20, abs=1e-5)
    # the other types stand on the height field alone, at the heights themselves
    slope, border = terrain.type_names.index("slope_up"), round(cfg.border_width / h)
    r0, c0 = border + slope * 80, border + (cfg.num_rows - 1) * 80
    assert not terrain.stepped[r0 : r0 + 81, c0 : c0 + 81].any()
    np.testing.assert_array_equal(terrain.field_heights[~terrain.stepped], terrain.heights[~terrain.stepped])


def test_a_box_tile_s_boxes_rise_exactly_to_its_heights_whatever_its_steps():
    from robolab.terrains.boxes import rectangles, tile_boxes

    rng = np.random.default_rng(3)
    for _ in range(30):
        values = rng.integers(0, 4, size=rng.integers(1, 12, size=2)) * 0.05
        values = np.repeat(np.repeat(values, 2, axis=0), 3, axis=1)  # patches larger than one cell
        mask = values > 0.05
        count = np.zeros(values.shape, dtype=int)
        for r0, r1, c0, c1 in rectangles(mask):
            count[r0 : r1 + 1, c0 : c1 + 1] += 1
        np.testing.assert_array_equal(count, mask.astype(int))  # every true cell once, no false one
        # the ground the boxes make (the highest top over each sample) is the tile's, its outer ring excluded
        tile = np.pad(values, 1)
        ground = np.full(values.shape, -np.inf)
        for r0, r1, c0, c1, top in tile_boxes(tile, "k", "f"):
            ground[r0 : r1 + 1, c0 : c1 + 1] = np.maximum(ground[r0 : r1 + 1, c0 : c1 + 1], top)
        np.testing.assert_array_equal(ground, values)


@pytest.mark.parametrize("direction, expected", [(0.0, (1.0, 0.0)), (180.0, (-1.0, 0.0)), (90.0, (0.0, 1.0))])
def test_the_terrain_evaluation_commands_the_direction_it_is_given(direction, expected):
    # Every env gets the same body-frame command whatever way its base faces. Carried along it (in the world,
    # through its own yaw) an env succeeds; carried the opposite way it reaches an edge too, the wrong one.
    from omegaconf import OmegaConf

    from robolab.config import build_env_cfg, hydra_overrides
    from robolab.terrain_evaluation import evaluate_on_terrain, terrain_eval_overrides

    overrides = terrain_eval_overrides(1.0, direction)
    dotlist = [o.removeprefix("++env.") for o in hydra_overrides(overrides) if "terrain.seed" not in o]
    cfg = build_env_cfg("RoboLab-Velocity-Rough-Go2-v0", OmegaConf.from_dotlist(dotlist))
    cfg.num_envs, cfg.episode_length_s, cfg.backend.num_threads = 4, 2.0, 1
    cfg.terrain = small_terrain(num_rows=1, num_cols=2, types={"flat": TerrainTypeCfg()})
    env = VelocityEnv(cfg)
    sign = torch.tensor([1.0, 1.0, -1.0, -1.0])  # envs 0 and 2 on the first tile, 1 and 3 on the second
    commands = []

    def policy(obs):
        command = env.command("base_velocity")
        commands.append(command.clone())
        w, z = env.state.base_quat[:, 0], env.state.base_quat[:, 3]  # upright: the yaw is 2 atan2(z, w)
        yaw = 2.0 * torch.atan2(z, w)
        cos, sin = yaw.cos(), yaw.sin()
        world = torch.stack([cos * command[:, 0] - sin * command[:, 1], sin * command[:, 0] + cos * command[:, 1]], 1)
        qpos = env.backend.qpos.clone()
        qpos[:, :2] += 2.0 * sign[:, None] * world * env.step_dt  # at twice the command, upright
        qpos[:, 2] = env.cfg.robot.init_base_height
        env.backend.reset(torch.ones(4, dtype=torch.bool), qpos, torch.zeros_like(env.backend.qvel))
        return torch.zeros(4, 12)

    table = evaluate_on_terrain(env, policy)
    assert torch.allclose(commands[0], torch.tensor([[*expected, 0.0]] * 4), atol=1e-6)
    rows = table["flat"].values()
    assert [(row["success_rate"], row["wrong_way_rate"], row["fall_rate"]) for row in rows] == [(0.5, 0.5, 0.0)]
    with pytest.raises(ValueError, match=r"^--terrain_eval_direction=nan: must be a finite angle in degrees$"):
        terrain_eval_overrides(1.0, float("nan"))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"num_rows": 0}, "env.terrain.num_rows=0: must be an integer >= 1"),
        ({"num_cols": 0}, "env.terrain.num_cols=0: must be an integer >= 1"),
        ({"tile_size": (4.0, -1.0)}, "env.terrain.tile_size=[4.0, -1.0]: expected [x, y], two positive lengths"),
        ({"horizontal_scale": 0.0}, "env.terrain.horizontal_scale=0.0: must be a positive length"),
        ({"horizontal_scale": 0.07}, "env.terrain.tile_size=4.0: must be a multiple of horizontal_scale=0.07"),
        ({"border_width": -1.0}, "env.terrain.border_width=-1.0: must be >= 0"),
        ({"types": {}}, "env.terrain.types is empty"),
        ({"types": {"a": TerrainTypeCfg(proportion=0.0)}}, "env.terrain.types: the proportions sum to 0"),
        (
            {"types": {"s": TerrainTypeCfg(func="pyramid_stairs", params={"step_height_range": (-0.1, 0.2)})}},
            "env.terrain.types.s.params.step_height_range=[-0.1, 0.2]: the low end must be >= 0",
        ),
        (
            {"types": {"s": TerrainTypeCfg(func="pyramid_stairs", params={"platform_width": 5.0})}},
            "env.terrain.types.s.params.platform_width=5.0, border_width=1.0: the platform must be >= 0 and smaller "
            "than the tile (4 m) less two borders",
        ),
        ({"types": {"s": TerrainTypeCfg(func="volcano")}}, "env.terrain.types.s: func='volcano': robolab.terrains"),
        (
            {"types": {"s": TerrainTypeCfg(func="pyramid_stairs", geometry="mesh")}},
            "env.terrain.types.s.geometry='mesh': must be one of ['heightfield', 'boxes']",
        ),
        (
            {"types": {"s": TerrainTypeCfg(func="random_rough", geometry="boxes")}},
            "env.terrain.types.s.geometry='boxes': a tile of random_rough needs",
        ),
        (
            {"types": {"s": TerrainTypeCfg(func="flat", params={"height": 1.0})}},
            "env.terrain.types.s: unknown parameter 'height'",
        ),
    ],
)
def test_a_bad_terrain_setting_is_a_one_line_error_naming_it(changes, message):
    with pytest.raises(ValueError) as err:
        generate(small_terrain(**changes))
    assert message in str(err.value) and "\n" not in str(err.value)


def rough_env(num_envs: int = 8, **changes) -> VelocityEnv:
    cfg = Go2RoughEnvCfg(num_envs=num_envs, terrain=small_terrain(), **changes)
    cfg.backend.num_threads = 1
    return VelocityEnv(cfg)


def test_a_height_scan_larger_than_the_terrain_is_a_one_line_error():
    cfg = Go2RoughEnvCfg(num_envs=2, terrain=small_terrain())
    cfg.observations["policy"].terms["height_scan"].params["size"] = (40.0, 1.0)
    with pytest.raises(TermError) as err:
        VelocityEnv(cfg)
    assert str(err.value).startswith("env.observations.policy.terms.height_scan.params.size=[40.0, 1.0]: the scan")


def test_the_height_scan_reads_the_ground_around_the_base_turned_with_its_yaw():
    env = rough_env(num_envs=7)
    obs = env.get_observations()
    scan = obs["critic"][:, -187:]  # the exact scan is the critic's last term
    # Under a robot standing on its tile's flat centre, the scan is base height - ground - 0.5 m around the base.
    base = env.state.base_pos
    expected_centre = base[:, 2] - env.ground_height(base[:, :2]) - 0.5
    torch.testing.assert_close(scan[:, 187 // 2], expected_centre.clamp(-1, 1), atol=1e-5, rtol=0)
    # A point 0.8 m ahead in the base's heading frame: check one against a direct lookup.
    from robolab.envs.mdp.observations import scan_points

    points = scan_points(env, (1.6, 1.0), 0.1)
    heading = points[:, -6] - points[:, 5]  # from the rear-middle to the front-middle point
    assert torch.allclose(heading.norm(dim=1), torch.full((7,), 1.6), atol=1e-5)


def test_feet_clearance_prices_a_moving_foot_s_shortfall_as_a_share_of_the_target():
    clearance = torch.tensor([[0.06, 0.12, 0.20, 0.0], [0.0, 0.0, 0.0, 0.0]])
    velocity = torch.zeros(2, 4, 3)
    velocity[0, :3, 0] = 1.0  # three feet swing forward at 1 m/s
    velocity[0, 3, 2] = 5.0  # the fourth only moves up: a planted foot is not priced
    velocity[1, :, 1] = 0.5  # sideways at 0.5 m/s, all four on the ground
    r = kernels.feet_clearance(clearance, velocity, target_height=0.12)
    gate_1, gate_half = math.tanh(2.0), math.tanh(1.0)
    torch.testing.assert_close(r, torch.tensor([0.5 * gate_1, 4 * gate_half]))  # at or above the target: nothing


def test_foot_clearance_is_the_foot_s_height_above_the_ground_beneath_it_in_the_world():
    from types import SimpleNamespace

    from robolab.envs.mdp.observations import foot_clearance

    # a base at (1, 2, 0.5) turned 90 degrees about z; feet 0.3 m ahead and 0.1 m left of it, 0.4 m below
    half = math.pi / 4
    state = SimpleNamespace(
        base_pos=torch.tensor([[1.0, 2.0, 0.5]]), base_quat=torch.tensor([[math.cos(half), 0.0, 0.0, math.sin(half)]])
    )
    backend = SimpleNamespace(foot_positions=torch.tensor([[[0.3, 0.1, -0.4], [-0.3, 0.0, -0.4]]]))
    seen = []

    def ground_height(xy):
        seen.append(xy)
        return xy[..., 0] * 0.1  # a slope rising 0.1 m per metre of x

    env = SimpleNamespace(state=state, backend=backend, ground_height=ground_height)
    clearance = foot_clearance(env)
    # turned 90 degrees, the base's x is the world's y: the feet stand at (0.9, 2.3) and (1.0, 1.7)
    torch.testing.assert_close(seen[0], torch.tensor([[[0.9, 2.3], [1.0, 1.7]]]))
    torch.testing.assert_close(clearance, torch.tensor([[0.1 - 0.09, 0.1 - 0.10]]))


def test_a_standing_go2_s_feet_stand_their_radius_above_every_kind_of_ground():
    from robolab.assets.go2 import FOOT_RADIUS
    from robolab.envs.mdp.observations import foot_clearance

    env = rough_env(num_envs=21)  # 3 per terrain type, each turned its own way
    for _ in range(25):
        env.step(torch.zeros(env.num_envs, env.num_actions))
    on_ground = env.foot_contact
    assert on_ground.float().mean() > 0.5
    clearance = foot_clearance(env)[on_ground]
    torch.testing.assert_close(clearance, torch.full_like(clearance, FOOT_RADIUS), atol=0.012, rtol=0)


def test_a_feet_clearance_of_zero_is_a_one_line_error_naming_it():
    from robolab.envs.terms import RewardTermCfg

    cfg = Go2RoughEnvCfg(num_envs=2, terrain=small_terrain())
    cfg.rewards["feet_clearance"] = RewardTermCfg(func="feet_clearance", weight=-0.5, params={"target_height": 0.0})
    with pytest.raises(TermError) as err:
        VelocityEnv(cfg)
    assert str(err.value).startswith("env.rewards.feet_clearance.params.target_height=0.0") and "\n" not in str(
        err.value
    )


def test_the_curriculum_moves_walkers_up_and_standers_down_with_a_scripted_policy():
    terrain = small_terrain(num_rows=4, num_cols=2, types={"flat": TerrainTypeCfg()}, max_init_level=2)
    cfg = Go2RoughEnvCfg(num_envs=8, terrain=terrain, episode_length_s=1.0, seed=3)
    cfg.backend.num_threads = 1
    cfg.terminations = {"time_out": TerminationTermCfg(func="time_out", time_out=True)}
    cfg.events["reset_robot"].params["position_range"] = 0.0
    cfg.commands["base_velocity"].params.update(
        {"lin_vel_x": (1.0, 1.0), "lin_vel_y": (0.0, 0.0), "ang_vel_z": (0.0, 0.0), "standing_fraction": 0.0}
    )
    env = VelocityEnv(cfg)
    walkers = torch.arange(8) % 2 == 0
    before = env.terrain.levels.clone()
    # walkers are carried 3 m along x in their 1 s episode (more than half a 4 m tile); standers stay put
    push = torch.zeros(8, 2)
    push[:, 0] = 3.0
    logged = []
    for _ in range(env.max_episode_length):
        env.backend.set_base_velocity(walkers, push)
        _, _, dones, extras = env.step(torch.zeros(8, 12))
        logged.append(extras["log"].get("Curriculum/terrain_level"))
    assert dones.all()
    after = env.terrain.levels
    assert torch.equal(after[walkers], before[walkers] + 1)
    assert torch.equal(after[~walkers], (before[~walkers] - 1).clamp_min(0))
    assert float(logged[-1]) == pytest.approx(float(after.float().mean()), rel=1e-6)
    # the next episodes start on their new tiles
    torch.testing.assert_close(env.state.base_pos[:, :2], env.terrain.env_origins[:, :2], atol=0.05, rtol=0)


def _carry_through_one_episode_as_commanded(env: VelocityEnv, on_step=None) -> None:
    """Move every env's robot as its velocity command asks (the pose set each control step: a perfect tracker),
    for as many steps as an episode lasts; ``on_step(command, world_velocity)`` sees each step's."""
    from robolab.envs.math import heading, yaw_quat

    def pose():
        return env.state.base_pos[:, :2].clone(), heading(env.state.base_quat)

    xy, yaw = pose()
    qpos = torch.zeros(env.num_envs, env.robot.model.nq)
    qpos[:, env.qpos_adr] = env.default_joint_pos
    qvel = torch.zeros(env.num_envs, env.robot.model.nv)
    everyone = torch.ones(env.num_envs, dtype=torch.bool)
    for _ in range(env.max_episode_length):
        command = env.commands
        yaw = yaw + command[:, 2] * env.step_dt
        forward = torch.stack([torch.cos(yaw), torch.sin(yaw)], dim=1)
        left = torch.stack([-torch.sin(yaw), torch.cos(yaw)], dim=1)
        velocity = command[:, :1] * forward + command[:, 1:2] * left
        if on_step is not None:
            on_step(command.clone(), velocity)
        xy = xy + velocity * env.step_dt
        qpos[:, :2], qpos[:, 2], qpos[:, 3:7] = xy, env.cfg.robot.init_base_height, yaw_quat(yaw)
        env.backend.reset(everyone, qpos, qvel)
        _, _, dones, _ = env.step(torch.zeros(env.num_envs, env.num_actions))
        new_xy, new_yaw = pose()  # where the envs that ended start their next episode
        ended = dones.bool()
        xy, yaw = torch.where(ended[:, None], new_xy, xy), torch.where(ended, new_yaw, yaw)


def _rough_task_on_flat_tiles(task: str, num_envs: int, seed: int, num_rows: int) -> VelocityEnvCfg:
    """A rough task's own config (commands, curriculum) on flat tiles only, so a carried robot stands anywhere."""
    from robolab.tasks.registry import load_env_cfg

    cfg = load_env_cfg(task)
    cfg.num_envs, cfg.seed = num_envs, seed
    cfg.terrain.num_rows, cfg.terrain.num_cols = num_rows, 2
    cfg.terrain.types = {"flat": TerrainTypeCfg()}
    cfg.backend.num_threads = 1
    return cfg


@pytest.mark.parametrize("task", ["RoboLab-Velocity-Rough-Go2-v0"])  # the other Go2 rough tasks share its commands
def test_a_robot_that_does_what_the_rough_task_commands_climbs_its_curriculum(task):
    # The curriculum promotes an env that walked half a tile from its start. A robot that tracks the task's own
    # commands must be promoted in most episodes and demoted in few: under yaw-rate commands it walks circles
    # (about 52 % up, 44 % down); under heading commands, straight lines (88 % up, 11 % down).
    cfg = _rough_task_on_flat_tiles(task, num_envs=64, seed=5, num_rows=10)
    cfg.terminations = {"time_out": TerminationTermCfg(func="time_out", time_out=True)}
    env = VelocityEnv(cfg)
    before = env.terrain.levels.clone()
    _carry_through_one_episode_as_commanded(env)
    after = env.terrain.levels
    solved = before == env.terrain.num_rows - 1  # the top level's winners go to a random level
    up = ((after == before + 1) | solved).float().mean()
    down = ((after == before - 1) & ~solved).float().mean()
    assert up >= 0.75 and down <= 0.25, (float(up), float(down))


@pytest.mark.parametrize(
    "task",
    [
        "RoboLab-Velocity-Rough-Go2-v0",
        "RoboLab-Velocity-Rough-Go2-Blind-v0",
        "RoboLab-Velocity-Rough-Go2-Teacher-v0",
        "RoboLab-Velocity-Rough-Go2-Distillation-v0",
    ],
)
def test_the_rough_tasks_send_the_robot_every_way_in_the_world_walking_forwards(task):
    # Under symmetric speeds the Go2 learned to climb stairs backwards and never forwards (docs/terrain.md): the
    # rough tasks ask for forward walking, lateral speed at most 0.3 m/s, and turn the robot to any way in the world.
    cfg = _rough_task_on_flat_tiles(task, num_envs=128, seed=3, num_rows=2)
    cfg.episode_length_s = 4.0
    env = VelocityEnv(cfg)
    commands, velocities = [], []
    _carry_through_one_episode_as_commanded(env, lambda c, v: (commands.append(c), velocities.append(v)))
    command, velocity = torch.cat(commands), torch.cat(velocities)
    assert command[:, 0].min() >= 0.0 and command[:, 0].max() > 0.9, "forward speed in [0, 1]"
    assert command[:, 1].abs().max() <= 0.3 + 1e-6 and command[:, 1].abs().max() > 0.2, "lateral within 0.3"
    moving = velocity.norm(dim=1) > 0.2
    way = torch.atan2(velocity[moving, 1], velocity[moving, 0])
    quadrants = torch.bincount(((way + math.pi) // (math.pi / 2)).long().clamp(0, 3), minlength=4) / len(way)
    assert quadrants.min() > 0.15, quadrants  # every way in the world, about a quarter each


def test_an_episode_a_new_run_started_part_way_is_judged_on_the_time_it_was_given():
    # rsl_rl starts a new run's envs at random points of their first episode; one that walks as commanded for what
    # was left of it has walked less than a whole episode asks for, and is not sent down for that.
    cfg = Go2RoughEnvCfg(num_envs=16, terrain=small_terrain(types={"flat": TerrainTypeCfg()}), seed=2)
    cfg.backend.num_threads = 1
    cfg.terminations = {"time_out": TerminationTermCfg(func="time_out", time_out=True)}
    cfg.commands["base_velocity"].params.update({"standing_fraction": 0.0, "lin_vel_x": (0.5, 1.0)})
    env = VelocityEnv(cfg)
    env.episode_length_buf = torch.full((16,), env.max_episode_length // 2)  # half an episode left
    before = env.terrain.levels.clone()
    _carry_through_one_episode_as_commanded(env)
    after, top = env.terrain.levels, env.terrain.num_rows - 1
    assert ((after >= before) | (before == top)).all(), (before.tolist(), after.tolist())  # the top's go anywhere
    assert (after > before).any()


def test_reaching_the_terrain_s_edge_ends_a_rough_episode_as_a_time_out_not_a_fall():
    # The robot walked where it was commanded: its value is bootstrapped and the evaluation counts no fall.
    env = rough_env(num_envs=4)
    edge = torch.tensor(env.terrain.map.extent) / 2
    qpos = env.backend.qpos.clone()
    qpos[:2, :2] = edge - 0.5  # two envs within the 1 m buffer of the terrain's corner
    env.backend.reset(torch.ones(4, dtype=torch.bool), qpos, torch.zeros_like(env.backend.qvel))
    _, _, dones, extras = env.step(torch.zeros(4, 12))
    assert dones.tolist() == [1, 1, 0, 0] and extras["time_outs"].tolist() == [True, True, False, False]
    assert float(extras["log"]["Episode_Termination/fell"]) == 0 and float(extras["log"]["Metrics/fall_rate"]) == 0


def test_a_tile_crossed_termination_promotes_a_walker_as_soon_as_it_left_its_tile():
    terrain = small_terrain(num_rows=4, num_cols=2, types={"flat": TerrainTypeCfg()}, max_init_level=0)
    cfg = Go2RoughEnvCfg(num_envs=4, terrain=terrain, seed=3)
    cfg.backend.num_threads = 1
    cfg.terminations = {
        "time_out": TerminationTermCfg(func="time_out", time_out=True),
        "tile_crossed": TerminationTermCfg(func="terrain_tile_crossed", time_out=True),
    }
    cfg.events["reset_robot"].params.update({"position_range": 0.0, "base_velocity": 0.0})
    env = VelocityEnv(cfg)
    walkers = torch.tensor([True, True, False, False])
    push = torch.tensor([[3.0, 0.0]]).repeat(4, 1)  # 2 m (half a 4 m tile) in about 0.7 s
    ended_at = torch.full((4,), -1.0)
    for step in range(60):
        env.backend.set_base_velocity(walkers & (ended_at < 0), push)
        _, _, dones, extras = env.step(torch.zeros(4, 12))
        assert not (dones.bool() & ~extras["time_outs"].bool()).any()  # no fall
        ended_at = torch.where(dones.bool() & (ended_at < 0), (step + 1) * env.step_dt, ended_at)
    assert ((ended_at[:2] > 0.6) & (ended_at[:2] < 1.2)).all() and (ended_at[2:] < 0).all(), ended_at.tolist()
    assert env.terrain.levels.tolist() == [1, 1, 0, 0]  # promoted now, 19 s before the episode would have ended


def test_a_resumed_curriculum_judges_each_first_episode_from_where_it_began():
    # Levels restored from a checkpoint differ from those the envs were placed by: their first episodes run on the
    # old tiles, rows away from the restored levels' centres. Standing still there walks nothing: down, never up.
    terrain = small_terrain(num_rows=4, num_cols=2, types={"flat": TerrainTypeCfg()}, max_init_level=0)
    cfg = Go2RoughEnvCfg(num_envs=8, terrain=terrain, episode_length_s=2.0, seed=3)
    cfg.backend.num_threads = 1
    cfg.terminations = {"time_out": TerminationTermCfg(func="time_out", time_out=True)}
    cfg.events["reset_robot"].params.update({"position_range": 0.0, "base_velocity": 0.0})
    cfg.commands["base_velocity"].params.update(
        {"lin_vel_x": (1.0, 1.0), "lin_vel_y": (0.0, 0.0), "ang_vel_z": (0.0, 0.0), "standing_fraction": 0.0}
    )
    env = VelocityEnv(cfg)
    assert (env.terrain.levels == 0).all()  # placed on level 0
    restored = torch.tensor([3, 3, 2, 2, 3, 3, 2, 2])
    env.load_state_dict({"terrain.levels": restored})
    for _ in range(env.max_episode_length):
        _, _, dones, _ = env.step(torch.zeros(8, 12))
    assert dones.all()
    assert torch.equal(env.terrain.levels, restored - 1)


def test_solving_the_top_level_sends_an_env_to_a_random_level():
    env = rough_env(num_envs=64)
    env.terrain.levels.fill_(env.terrain.num_rows - 1)
    env.episode_steps.fill_(10)
    far = env.terrain.env_origins[:, :2] + torch.tensor([3.0, 0.0])
    env.state.base_pos[:, :2] = far
    from robolab.envs.mdp.curricula import terrain_levels

    terrain_levels(env, torch.ones(64, dtype=torch.bool))
    levels = env.terrain.levels
    assert (levels < env.terrain.num_rows).all() and len(levels.unique()) > 1


def test_the_terrain_levels_survive_a_checkpoint_and_a_resume(tmp_path):
    from robolab.cli.train import build_parser
    from robolab.session import prepare_training, run_training

    log_root = str(tmp_path / "logs")
    args = ["--task", "RoboLab-Velocity-Rough-Go2-v0", *TINY, *SMALL_OVERRIDES, "--log_root", log_root]
    parser = build_parser()

    def session(*extra):
        options, overrides = parser.parse_known_args([*args, *extra])
        return prepare_training(TrainOptions.from_namespace(options), overrides)

    first = session("--max_iterations", "2")
    with first.closer:  # the session holds its run directory until it is closed
        run_training(first)
    levels = first.env.terrain.levels.clone()
    saved = checkpoint.load(f"{first.plan.run_dir}/model_1.pt")
    assert torch.equal(saved["env_state"][0]["terrain.levels"], levels)
    resumed = session("--max_iterations", "1", "--resume", "--seed", "99")
    assert torch.equal(resumed.env.terrain.levels, levels)  # not a fresh draw from seed 99
    resumed.env.close()


@pytest.mark.slow
def test_two_ranks_keep_their_own_levels_and_one_rank_resumes_them_all(tmp_path):
    from test_distributed import dist_train_args, torchrun

    log_root = str(tmp_path / "logs")
    rough = ["--task", "RoboLab-Velocity-Rough-Go2-v0", *SMALL_OVERRIDES]
    args = [*dist_train_args(log_root, iterations=2), *rough, "--check_replication_every", "1"]
    out = run(torchrun(2, train_cmd()[1], *args), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "replication check passed" in out.stdout  # the terrain leaves the models identical on every rank
    run_dir = next(p for p in (tmp_path / "logs").rglob("model_1.pt")).parent
    saved = checkpoint.load(str(run_dir / "model_1.pt"))
    states = [s["terrain.levels"] for s in saved["env_state"]]
    assert len(states) == 2 and not torch.equal(states[0], states[1])  # each rank's envs moved on their own
    summary = json.loads((run_dir / "summary.json").read_text())
    assert 0 <= summary["latest_logged"]["Curriculum/terrain_level"] <= 2
    # one rank resumes the two ranks' envs: the same levels, the first rank's envs then the second's
    resumed = run(
        train_cmd(
            "--task",
            "RoboLab-Velocity-Rough-Go2-v0",
            *TINY,
            "--num_envs",
            "32",
            *SMALL_OVERRIDES,
            "--max_iterations",
            "1",
            "--log_root",
            log_root,
            "--resume",
            str(run_dir / "model_1.pt"),
        ),
        env=clean_env(),
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = checkpoint.load(str(run_dir / "model_2.pt"))
    assert after["env_state"][0]["terrain.levels"].shape == (32,)


def facing_x_commanded_forward(cfg) -> None:
    """What play.py's evaluation overrides set (a straight command), with every robot facing +x: a test that
    carries a robot along +x carries it where its command points."""
    cfg.commands["base_velocity"].params.update(
        lin_vel_x=(1.0, 1.0), lin_vel_y=(0.0, 0.0), ang_vel_z=(0.0, 0.0), heading_command=False, standing_fraction=0.0
    )
    cfg.events["reset_robot"].params["yaw_range"] = (0.0, 0.0)


def test_the_terrain_evaluation_counts_successes_falls_and_errors_per_type_and_level():
    from robolab.terrain_evaluation import evaluate_on_terrain, markdown

    terrain = small_terrain(
        num_rows=2, num_cols=2, types={"flat": TerrainTypeCfg(), "rough": TerrainTypeCfg(func="random_rough")}
    )
    cfg = Go2RoughEnvCfg(num_envs=8, terrain=terrain, episode_length_s=1.0)
    cfg.backend.num_threads = 1
    on_last_tile = torch.arange(8) % 4 == 3  # envs 3 and 7: the rough tile of level 1
    cfg.terminations = {
        "time_out": TerminationTermCfg(func="time_out", time_out=True),
        "tripped": TerminationTermCfg(func=lambda env: on_last_tile & (env.episode_length_buf >= 5)),
    }
    cfg.curricula = {}
    facing_x_commanded_forward(cfg)
    env = VelocityEnv(cfg)
    carried = torch.arange(8) < 4  # one env of each tile is carried off it at 3 m/s, the other stands
    push = torch.tensor([[3.0, 0.0]]).repeat(8, 1)

    def policy(obs):
        env.backend.set_base_velocity(carried, push)
        return torch.zeros(8, 12)

    table = evaluate_on_terrain(env, policy)
    assert set(table) == {"flat", "rough"} and set(table["flat"]) == {"0", "1"}
    for name, per_level in table.items():
        for level, row in per_level.items():
            assert row["envs"] == 2 and row["tracking_error"] > 0
            if (name, level) == ("rough", "1"):  # both trip before the carried one reaches the edge
                assert row["success_rate"] == 0.0 and row["fall_rate"] == 1.0
                assert row["fell_by"] == {"tripped": 1.0, "diverged": 0.0}
            else:
                assert row["success_rate"] == 0.5 and row["fall_rate"] == 0.0 and row["fell_by"]["tripped"] == 0
    assert markdown(table).splitlines()[2] == "| flat | 50 | 50 |"


def test_the_terrain_evaluation_judges_the_tile_s_edge_whatever_time_out_terms_the_task_has():
    # The rough tasks end an episode half a tile from its start (terrain_tile_crossed): on a diagonal that comes
    # before the square tile's edge, and the evaluation must still see the robot reach it.
    from robolab.terrain_evaluation import evaluate_on_terrain

    terrain = small_terrain(num_rows=2, num_cols=2, types={"flat": TerrainTypeCfg()})
    cfg = Go2RoughEnvCfg(num_envs=8, terrain=terrain, episode_length_s=3.0)
    cfg.backend.num_threads = 1
    cfg.terminations["tile_crossed"] = TerminationTermCfg(func="terrain_tile_crossed", time_out=True)
    cfg.curricula = {}
    facing_x_commanded_forward(cfg)
    cfg.commands["base_velocity"].params.update(lin_vel_y=(1.0, 1.0))  # diagonal, as it is carried
    env = VelocityEnv(cfg)
    carried = torch.arange(8) % 2 == 0  # carried diagonally at 2 m/s along x and y, upright; the others stand

    def policy(obs):
        qpos = env.backend.qpos.clone()
        qpos[:, :2] += 2.0 * env.step_dt
        qpos[:, 2], qpos[:, 3:7] = env.cfg.robot.init_base_height, torch.tensor([1.0, 0.0, 0.0, 0.0])
        env.backend.reset(carried, qpos, torch.zeros_like(env.backend.qvel))
        return torch.zeros(8, 12)

    table = evaluate_on_terrain(env, policy)
    rates = [row["success_rate"] for row in table["flat"].values()]
    assert rates == [0.5] * len(rates), table  # every carried env, none of the standing ones


def test_the_terrain_evaluation_stops_after_the_steps_it_is_given():
    """``play.py --terrain_eval --steps N``: N control steps, and an env still walking then has not reached the edge."""
    from robolab.terrain_evaluation import evaluate_on_terrain

    terrain = small_terrain(num_rows=2, num_cols=2, types={"flat": TerrainTypeCfg()})
    cfg = Go2RoughEnvCfg(num_envs=4, terrain=terrain, episode_length_s=3.0)
    cfg.backend.num_threads = 1
    cfg.curricula = {}
    env = VelocityEnv(cfg)
    calls = []

    def policy(obs):
        calls.append(1)
        return torch.zeros(4, 12)

    table = evaluate_on_terrain(env, policy, steps=3)
    assert len(calls) == 3
    assert all(row["success_rate"] == 0.0 for row in table["flat"].values()), table


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"max_init_level": -1}, "env.terrain.max_init_level=-1: must be an integer >= 0"),
        (
            {"types": {"s": TerrainTypeCfg(func="pyramid_slope", params={"slope_deg_range": (0.0, 95.0)})}},
            "env.terrain.types.s.params.slope_deg_range=[0.0, 95.0]: a slope must be under 90 degrees",
        ),
        (
            {"types": {"r": TerrainTypeCfg(func="random_rough", params={"step": 0.0})}},
            "env.terrain.types.r.params.step=0.0, downsampled_scale=0.2: both must be > 0",
        ),
        (
            {"types": {"s": TerrainTypeCfg(func="pyramid_stairs", params={"step_width": 0.0})}},
            "env.terrain.types.s.params.step_width=0.0: must be > 0",
        ),
        (
            {"types": {"b": TerrainTypeCfg(func="discrete_obstacles", params={"count": -1})}},
            "env.terrain.types.b.params.count=-1: must be >= 0",
        ),
        (
            {"types": {"u": TerrainTypeCfg(func=lambda rng, difficulty, x, y: x[:1])}},
            "env.terrain.types.u: returned (1, 41) heights (finite ones wanted, shaped like x: (41, 41))",
        ),
    ],
)
def test_a_bad_tile_setting_is_a_one_line_error_naming_it(changes, message):
    with pytest.raises(ValueError) as err:
        generate(small_terrain(**changes))
    assert message in str(err.value) and "\n" not in str(err.value)


def _set(cfg, path: str, value) -> None:
    table, name, param = path.split(".")
    getattr(cfg, table)[name].params[param] = value


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("events.reset_robot.position_range", -1.0, "env.events.reset_robot.params.position_range=-1.0: a half-width"),
        ("events.reset_robot.footprint", (1.0,), "env.events.reset_robot.params.footprint=[1.0]: expected [x, y]"),
        (
            "terminations.out_of_terrain.distance_buffer",
            100.0,
            "env.terminations.out_of_terrain.params.distance_buffer=100.0: must be >= 0 and under half",
        ),
        (
            "curricula.terrain_level.move_up_fraction",
            0.0,
            "env.curricula.terrain_level.params.move_up_fraction=0.0, move_down_fraction=0.5: must be > 0",
        ),
    ],
)
def test_a_bad_rough_term_parameter_is_a_one_line_error_naming_it(path, value, message):
    cfg = Go2RoughEnvCfg(num_envs=2, terrain=small_terrain())
    cfg.backend.num_threads = 1
    _set(cfg, path, value)
    with pytest.raises(TermError) as err:
        VelocityEnv(cfg)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_bad_height_scan_resolution_is_a_one_line_error():
    cfg = Go2RoughEnvCfg(num_envs=2, terrain=small_terrain())
    cfg.observations["policy"].terms["height_scan"].params["resolution"] = 0.0
    with pytest.raises(TermError, match=r"^env\.observations\.policy\.terms\.height_scan\.params\.resolution=0\.0: "):
        VelocityEnv(cfg)


def test_the_terrain_evaluation_refuses_what_it_cannot_judge():
    from robolab.cli import play
    from robolab.cli.terrain import load_terrain_cfg
    from robolab.config import ConfigError
    from robolab.terrain_evaluation import evaluate_on_terrain, terrain_eval_overrides

    with pytest.raises(ValueError, match=r"^--terrain_eval_speed=0.0: must be > 0 m/s$"):
        terrain_eval_overrides(0.0)
    env = rough_env(num_envs=8)  # 21 tiles
    with pytest.raises(ValueError, match=r"^--num_envs=8: the evaluation needs at least one env per tile \(21\)$"):
        evaluate_on_terrain(env, lambda obs: torch.zeros(8, 12))
    with pytest.raises(ConfigError, match="--terrain_eval runs its own episodes: leave out --viewer"):
        play.play(["--task", "RoboLab-Velocity-Rough-Go2-v0", "--terrain_eval", "--viewer", "web"])
    with pytest.raises(ConfigError, match="RoboLab-Velocity-Flat-Go2-v0 has no generated terrain"):
        load_terrain_cfg("RoboLab-Velocity-Flat-Go2-v0", [])
    with pytest.raises(ConfigError, match=r"^agent.max_iterations=1: only env\.\* overrides shape the terrain$"):
        load_terrain_cfg("RoboLab-Velocity-Rough-Go2-v0", ["agent.max_iterations=1"])


def test_divergences_are_logged_per_terrain_type():
    """Each type's count of episodes ended by a divergence, for finding where the physics fails (their sum is
    ``Episode_Termination/diverged``)."""
    env = rough_env(num_envs=21)  # 3 envs on each of the 7 columns, one type a column
    names = env.terrain.level_type_names
    on_type = [env.terrain.type_names[c] for c in env.terrain.types.tolist()]
    chosen = {"boxes": 2, "stairs_up": 1}  # how many of that type's envs diverge
    mask = torch.zeros(env.num_envs, dtype=torch.bool)
    for name, n in chosen.items():
        mask[[i for i, t in enumerate(on_type) if t == name][:n]] = True
    env.divergence.diverged = lambda non_finite: mask.clone()  # which envs diverge is this test's to choose
    _, _, dones, extras = env.step(torch.zeros(env.num_envs, env.num_actions))
    log = extras["log"]
    assert bool(dones.bool()[mask].all())
    per_type = {name: float(log[f"Episode_Termination/diverged/{name}"]) for name in names}
    assert per_type == {name: float(chosen.get(name, 0)) for name in names}
    assert float(log["Episode_Termination/diverged"]) == sum(chosen.values())


def test_a_diverged_episode_moves_its_env_neither_up_nor_down():
    # Its position is what the solver blew up (here 2 km off, beyond env.divergence.max_base_distance), not a walk.
    cfg = Go2RoughEnvCfg(num_envs=4, terrain=small_terrain(max_init_level=0))
    cfg.backend.num_threads = 1
    env = VelocityEnv(cfg)
    qpos = env.backend.qpos.clone()
    qpos[0, 0] += 2000.0  # diverged
    qpos[1, 0] += 1.5  # walked (in one step), less than half its 4 m tile: its episode goes on
    env.backend.reset(torch.tensor([True, True, False, False]), qpos, torch.zeros_like(env.backend.qvel))
    _, _, dones, extras = env.step(torch.zeros(4, 12))
    assert dones.tolist() == [1, 0, 0, 0] and float(extras["log"]["Episode_Termination/diverged"]) == 1
    assert env.terrain.levels.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("max_samples", [80, 7])
def test_the_height_field_pieces_meet_at_the_tiles_edges_and_hold_every_sample(max_samples):
    """MuJoCo gets the field in tile-sized pieces (MuJoCo Warp's collision loses precision far from a large field's
    centre); together they must be the field itself: every sample in a piece at its height, neighbours sharing
    their edge samples, a cut at every tile edge, none wider than ``max_samples``."""
    from robolab.terrains.heightfield import field_chunks

    tmap = generate(small_terrain())
    ny, nx = tmap.field_heights.shape
    covered = np.zeros((ny, nx), dtype=int)
    x_edges, y_edges = set(), set()
    for _, (half_x, half_y, elevation, _), (cx, cy, low), nrow, ncol, data in field_chunks(tmap, max_samples):
        assert max(nrow, ncol) <= max_samples + 1
        c0 = round((cx - half_x - tmap.origin[0]) / tmap.spacing)
        r0 = round((cy - half_y - tmap.origin[1]) / tmap.spacing)
        assert (ncol - 1) * tmap.spacing == pytest.approx(2 * half_x, abs=1e-9)
        heights = np.asarray(data).reshape(nrow, ncol) * elevation + low
        np.testing.assert_allclose(heights, tmap.field_heights[r0 : r0 + nrow, c0 : c0 + ncol], atol=1e-5)
        covered[r0 : r0 + nrow, c0 : c0 + ncol] += 1
        x_edges |= {c0, c0 + ncol - 1}
        y_edges |= {r0, r0 + nrow - 1}
    assert covered.min() >= 1  # no gap; shared edges are covered twice, corners four times
    x_min, _, y_min, _ = tmap.grid_bounds
    rows, cols = tmap.tile_origins.shape[:2]
    tile_x = {round((x_min + k * tmap.tile_size[0] - tmap.origin[0]) / tmap.spacing) for k in range(rows + 1)}
    tile_y = {round((y_min + k * tmap.tile_size[1] - tmap.origin[1]) / tmap.spacing) for k in range(cols + 1)}
    assert tile_x <= x_edges and tile_y <= y_edges
