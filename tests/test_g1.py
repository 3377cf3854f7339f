"""The G1-class humanoid: its model against Unitree's published figures, the terms a biped needs against
hand-computed values, and its tasks running on both embedded backends."""

from __future__ import annotations

import os
import sys

import mujoco
import numpy as np
import pytest
import torch

from robolab.assets import load_robot
from robolab.assets.g1 import ARM_JOINTS, JOINTS, LEG_JOINTS, WAIST_JOINTS
from robolab.assets.g1.model import FOOT_RADIUS, MOTORS, motor
from robolab.envs import VelocityEnv
from robolab.envs.mdp import kernels
from robolab.tasks.velocity.g1.env_cfgs import G1FlatEnvCfg, G1RoughEnvCfg, g1_robot_cfg
from test_terrain import small_terrain

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")


@pytest.fixture(scope="module")
def g1():
    return load_robot(g1_robot_cfg())


def _pose(model, robot, joint_pos, height):
    data = mujoco.MjData(model)
    data.qpos[:3], data.qpos[3] = (0.0, 0.0, height), 1.0
    data.qpos[robot.qpos_adr] = joint_pos
    mujoco.mj_forward(model, data)
    return data


def test_the_g1_has_unitrees_29_joints_in_sdk_order_and_its_published_mass(g1):
    model = g1.model
    assert len(JOINTS) == 29 and len(LEG_JOINTS) == 12 and len(WAIST_JOINTS) == 3 and len(ARM_JOINTS) == 14
    assert [model.joint(i).name for i in range(1, model.njnt)] == JOINTS  # qpos order is the SDK's order
    assert model.nu == 29
    # Unitree's G1 29-DoF (rev 1.0) description sums to 33.341 kg; a mistyped link mass shows here
    assert model.body_subtreemass[g1.base_body_id] == pytest.approx(33.341, abs=0.005)
    # every actuated joint has its motor's torque limit and reflected inertia
    for joint, act in zip(JOINTS, g1.actuator_ids):
        jid = model.joint(joint).id
        assert model.actuator_forcerange[act, 1] == motor(joint).effort
        assert model.dof_armature[model.jnt_dofadr[jid]] == pytest.approx(motor(joint).armature, rel=1e-6)
    assert {motor(j).effort for j in LEG_JOINTS} == {88.0, 139.0, 50.0}
    assert set(MOTORS) >= {"7520-14", "7520-22", "5020", "4010"}


def test_the_right_side_mirrors_the_left(g1):
    """Built from the left limbs: the right bodies' masses, positions and inertia tensors are their mirror images
    in any mirrored pose, and roll/yaw ranges flip sign (the published right hip roll is -2.9671..0.5236)."""
    model = g1.model
    rng = np.random.default_rng(0)
    q = rng.uniform(-0.3, 0.3, 29)
    q[[JOINTS.index("waist_yaw_joint"), JOINTS.index("waist_roll_joint")]] = 0.0  # a symmetric trunk
    mirrored = q.copy()
    for i, joint in enumerate(JOINTS):
        if joint.startswith("left_"):
            j = JOINTS.index(joint.replace("left_", "right_"))
            flip = -1.0 if any(k in joint for k in ("roll", "yaw")) else 1.0
            mirrored[j] = flip * q[i]
    data = _pose(model, g1, mirrored, 0.8)
    data_left = _pose(model, g1, q, 0.8)
    flip = np.diag([1.0, -1.0, 1.0])
    for b in range(model.nbody):
        name = model.body(b).name
        if not name.startswith("left_"):
            continue
        r = model.body(name.replace("left_", "right_")).id
        assert model.body_mass[r] == model.body_mass[b]
        np.testing.assert_allclose(data.xipos[r], flip @ data_left.xipos[b], atol=2e-4)
        inertia = lambda d, i: d.ximat[i].reshape(3, 3) @ np.diag(model.body_inertia[i]) @ d.ximat[i].reshape(3, 3).T
        np.testing.assert_allclose(inertia(data, r), flip @ inertia(data_left, b) @ flip, atol=1e-7)
    ranges = {model.joint(j).name: tuple(np.round(model.jnt_range[j], 4)) for j in range(1, model.njnt)}
    assert ranges["right_hip_roll_joint"] == (-2.9671, 0.5236)
    assert ranges["right_shoulder_roll_joint"] == (-2.2515, 1.5882)
    assert ranges["right_knee_joint"] == ranges["left_knee_joint"]


def test_the_home_pose_stands_on_flat_soles_over_its_support(g1):
    """At the task's start height the four sole capsules are level, just above the floor, and the centre of mass is
    over the feet (between heel and toe, between the feet)."""
    cfg = g1_robot_cfg()
    model = g1.model
    data = _pose(model, g1, cfg.default_joint_pos, cfg.init_base_height)
    soles = [g for g in range(model.ngeom) if model.geom_priority[g] == 1 and model.geom_bodyid[g] != 0]
    assert len(soles) == 4
    lowest = []
    for g in soles:
        axis = data.geom_xmat[g].reshape(3, 3)[:, 2]
        for end in (-1, 1):
            lowest.append(data.geom_xpos[g][2] + end * model.geom_size[g][1] * axis[2] - FOOT_RADIUS)
    assert max(lowest) - min(lowest) < 0.002  # level soles
    assert 0.0 < min(lowest) < 0.01
    com = data.subtree_com[g1.base_body_id]
    sole_x = [data.geom_xpos[g][0] for g in soles]
    feet_y = [data.xpos[model.body(f).id][1] for f in cfg.foot_bodies]
    assert min(sole_x) < com[0] < max(sole_x) and min(feet_y) < com[1] < max(feet_y)


# --- terms a biped needs ------------------------------------------------------------------------------------------
def test_biped_air_time_pays_single_support_up_to_the_threshold_only_while_moving():
    air = torch.tensor([[0.0, 0.3], [0.0, 0.6], [0.2, 0.3], [0.0, 0.0], [0.0, 0.3]])
    contact = torch.tensor([[0.5, 0.0], [0.7, 0.0], [0.0, 0.0], [0.4, 0.2], [0.5, 0.0]])
    command = torch.tensor([[1.0, 0, 0]] * 4 + [[0.05, 0, 0]])
    r = kernels.feet_air_time_biped(air, contact, command, threshold=0.4)
    # one foot down: min(stance 0.5, swing 0.3) = 0.3; capped at 0.4; both up (hop) or both down pay nothing; a
    # near-zero command pays nothing
    torch.testing.assert_close(r, torch.tensor([0.3, 0.4, 0.0, 0.0, 0.0]))


def test_feet_slide_counts_only_feet_on_the_ground():
    velocity = torch.tensor([[[3.0, 4.0, 9.0], [1.0, 0.0, 0.0]]])
    assert kernels.feet_slide(velocity, torch.tensor([[True, False]])).item() == pytest.approx(
        5.0, rel=1e-6
    )  # z ignored


def test_joint_deviation_and_limits_in_radians():
    q = torch.tensor([[0.1, -0.2, 0.5]])
    assert kernels.joint_deviation_l1(q, torch.zeros(3)).item() == pytest.approx(0.8, rel=1e-6)
    lo, hi = torch.tensor([0.0, 0.0, -1.0]), torch.tensor([1.0, 1.0, 0.3])
    assert kernels.joint_pos_limits(q, lo, hi).item() == pytest.approx(0.2 + 0.2, rel=1e-6)


def test_joint_terms_select_joints_by_pattern_and_name_a_pattern_that_matches_none():
    cfg = G1FlatEnvCfg(num_envs=2)
    cfg.rewards["arm_deviation"].params["joints"] = [".*_elbow_joint"]
    env = VelocityEnv(cfg)
    try:
        from robolab.envs.mdp.rewards import joint_deviation_l1, joint_ids

        elbows = joint_ids(env, [".*_elbow_joint"])
        assert [cfg.robot.joint_names[i] for i in elbows] == ["left_elbow_joint", "right_elbow_joint"]
        home = env.default_joint_pos
        env.state.joint_pos[:] = home
        env.state.joint_pos[:, elbows[0]] += 0.25
        env.state.joint_pos[:, 0] += 1.0  # a hip: not an elbow
        torch.testing.assert_close(joint_deviation_l1(env, [".*_elbow_joint"]), torch.tensor([0.25, 0.25]))
        with pytest.raises(ValueError, match=r"'.\*_knees_joint' matches none of the robot's joints"):
            joint_ids(env, [".*_knees_joint"])
    finally:
        env.close()
    cfg = G1FlatEnvCfg(num_envs=2)
    cfg.rewards["hip_deviation"].params["joints"] = ["elbow"]
    with pytest.raises(ValueError, match=r"env.rewards.hip_deviation: .*'elbow' matches none"):
        VelocityEnv(cfg)


# --- the tasks ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg_class", [G1FlatEnvCfg, G1RoughEnvCfg], ids=["flat", "rough"])
def test_the_g1_tasks_step_and_penalise_falls(cfg_class):
    """Observations are Isaac Lab's G1 frame (3 + 3 + 3 + 3 + 29 + 29 + 29 = 99, plus the 187-point scan on rough
    ground); a fall costs the termination penalty in the step it happens, a time-out does not."""
    cfg = cfg_class(num_envs=4, seed=3)
    if cfg.terrain is not None:
        cfg.terrain = small_terrain()
    env = VelocityEnv(cfg)
    try:
        obs = env.get_observations()
        assert obs["policy"].shape == (4, 99 + (187 if cfg.terrain is not None else 0))
        weight = cfg.rewards["termination"].weight
        fell = 0
        for _ in range(150):  # sagging under large random targets: most envs fall within 3 s
            _, reward, done, extras = env.step(torch.randn(4, 29) * 2.0)
            falls = done.bool() & ~extras["time_outs"]
            fell += int(falls.sum())
            assert torch.equal(env.reset_terminated, falls)
            falls &= ~env.terminated_by["diverged"]  # a diverged env earns nothing, the penalty included
            if falls.any():
                assert (reward[falls] <= weight * env.step_dt + 1.0).all()  # the penalty outweighs any step's gain
        assert fell > 0
    finally:
        env.close()


def test_the_g1_walks_the_biped_gait_table():
    cfg = G1FlatEnvCfg(num_envs=2)
    env = VelocityEnv(cfg)
    try:
        assert env.gait_scores.names == ("walk",)
        one_down = torch.tensor([[True, False], [True, True]])
        assert env.gait_scores(one_down)[:, 0].tolist() == [True, False]
    finally:
        env.close()


@pytest.mark.parametrize("terrain", [False, True], ids=["flat", "rough"])
def test_the_g1_gives_the_same_trajectory_on_mujoco_c_and_mujoco_warp(terrain):
    """Heel and toe capsules on the floor plane, and on the height field and the stairs' boxes."""
    pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    from robolab.envs.backends.mujoco_backend import MujocoBackend
    from robolab.envs.backends.warp_backend import WarpBackend
    from robolab.terrains.field import TerrainField
    from robolab.terrains.generator import generate

    n = 7 if terrain else 2
    tmap = generate(small_terrain()) if terrain else None
    pair = []
    for name in ("mujoco", "warp"):
        robot = load_robot(g1_robot_cfg(), timestep=0.005, terrain=tmap)
        robot.model.opt.iterations, robot.model.opt.ls_iterations, robot.model.opt.tolerance = 100, 50, 1e-10
        pair.append(MujocoBackend(robot, n, 1) if name == "mujoco" else WarpBackend(robot, n, DEVICE))
    c, ours = pair
    qpos = torch.tensor(c.robot.model.key_qpos[0], dtype=torch.float32).repeat(n, 1)
    if tmap is not None:  # env i on the middle row's tile of type i, 0.9 m out of its centre
        field = TerrainField(tmap, n, torch.device("cpu"), torch.Generator().manual_seed(0), 0)
        xy = torch.as_tensor(tmap.tile_origins[1, :, :2]) + torch.tensor([0.9, 0.0])
        qpos[:, :2], qpos[:, 2] = xy, field.height_at(xy) + 0.80
    for backend in pair:
        backend.reset(torch.ones(n, dtype=torch.bool), qpos, torch.zeros(n, backend.robot.model.nv))
    g = torch.Generator().manual_seed(0)
    default = torch.tensor(g1_robot_cfg().default_joint_pos)
    for _ in range(15):
        targets = default + 0.05 * torch.randn(n, 29, generator=g)
        c.step(targets, 4)
        ours.step(targets, 4)
        torch.testing.assert_close(ours.qpos[:, :7].cpu(), c.qpos[:, :7], atol=0.02, rtol=0)
        # An ankle swings 0.03 rad apart for a step on random_rough: MuJoCo Warp keeps 4 of a foot's contacts with
        # a height field, MuJoCo C up to 50, and which 4 moves with the field's frame (it is cut into tile pieces)
        torch.testing.assert_close(ours.qpos[:, 7:].cpu(), c.qpos[:, 7:], atol=0.04 if tmap else 0.02, rtol=0)
        if tmap is None:  # (on a height field the two solvers' contact impulses differ more than their poses do)
            torch.testing.assert_close(ours.foot_velocities.cpu(), c.foot_velocities, atol=0.05, rtol=0)
        on_ground = ours.contact_forces("foot").cpu() > 1.0, c.contact_forces("foot") > 1.0
        assert torch.equal(*on_ground)
    assert all(feet.any() for feet in on_ground)
    assert not ours.overflow_flags.any()


# --- every pipeline and tool, end to end on the CPU ---------------------------------------------------------------
@pytest.mark.slow
def test_g1_trains_with_video_resumes_plays_exports_and_runs_sim2sim_onto_mujoco_warp(tmp_path):
    import json
    import sys

    from conftest import ROOT, TINY, clean_env, run, train_cmd

    logs = tmp_path / "logs"
    flat = ["--task", "RoboLab-Velocity-Flat-G1-v0", *TINY, "--log_root", str(logs)]
    video = ["--video", "--video_length", "5", "--video_interval", "8"]
    res = run(train_cmd(*flat, "--max_iterations", "2", *video), env=clean_env(MUJOCO_GL="egl"))
    assert res.returncode == 0, res.stderr[-3000:]
    res = run(train_cmd(*flat, "--max_iterations", "1", "--resume"))
    assert res.returncode == 0, res.stderr[-3000:]
    (run_dir,) = [d for d in (logs / "g1_flat").iterdir() if (d / "summary.json").exists()][-1:]
    assert list((run_dir / "videos" / "train").glob("*.mp4"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 3  # 2, then 1 more resumed in the same run
    play = [sys.executable, str(ROOT / "scripts" / "play.py"), "--task", "RoboLab-Velocity-Flat-G1-v0"]
    res = run([*play, "--log_root", str(logs), "--num_envs", "4", "--steps", "20"])
    assert res.returncode == 0, res.stderr[-3000:]
    assert list(run_dir.glob("exported/*.onnx")), "play exports the policy"
    out = tmp_path / "s2s.json"
    s2s = [sys.executable, str(ROOT / "scripts" / "sim2sim.py"), "--task", "RoboLab-Velocity-Flat-G1-v0"]
    target = ["--target", "RoboLab-Velocity-Flat-G1-v0", "env.backend=warp"]
    res = run([*s2s, *target, "--log_root", str(logs), "--num_envs", "4", "--steps", "20", "--output", str(out)])
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["source"]["steps"] == 20 and result["target"]["steps"] == 20


@pytest.mark.slow
def test_a_users_own_humanoid_mjcf_trains_through_the_name_map(tmp_path):
    """A humanoid MJCF file with its own joint names (here the built-in G1 written out, every joint renamed) trains
    on the G1 task through ``env.robot.mjcf_path`` and ``env.robot.joint_names``."""
    from conftest import TINY, run, train_cmd
    from robolab.assets.g1 import build_g1_spec

    renamed = {joint: "J" + joint.replace("_joint", "").title().replace("_", "") for joint in JOINTS}
    xml = build_g1_spec(g1_robot_cfg()).to_xml()
    for joint, name in renamed.items():
        xml = xml.replace(f'"{joint}"', f'"{name}"')
    path = tmp_path / "my_humanoid.xml"
    path.write_text(xml)
    names = "[" + ",".join(renamed[j] for j in JOINTS) + "]"
    robot = [f"env.robot.mjcf_path={path}", f"env.robot.joint_names={names}"]
    cmd = train_cmd("--task", "RoboLab-Velocity-Flat-G1-v0", *TINY, "--max_iterations", "1", "--log_root",
                    str(tmp_path / "logs"), *robot)  # fmt: skip
    # the terms that pick joints by name pattern name the one that matches none of the new names
    res = run(cmd)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("error: env.rewards.joint_torques: joints: '.*_hip_.*_joint'")
    patterns = {
        "joint_torques": "[J.*Hip.*,J.*Knee,J.*Ankle.*]",
        "joint_acc": "[J.*Hip.*,J.*Knee]",
        "ankle_limits": "[JLeftAnkle.*,JRightAnkle.*]",
        "hip_deviation": "[J.*HipYaw,J.*HipRoll]",
        "arm_deviation": "[J.*Shoulder.*,J.*Elbow,J.*Wrist.*]",
        "waist_deviation": "[JWaist.*]",
    }
    res = run([*cmd, *(f"env.rewards.{term}.params.joints={p}" for term, p in patterns.items())])
    assert res.returncode == 0, res.stderr[-3000:]
    assert "JLeftHipPitch" in xml and '"left_hip_pitch_joint"' not in xml


# --- the scripted walk (AMP) --------------------------------------------------------------------------------------
def test_the_scripted_walk_keeps_soles_level_lifts_the_swing_foot_and_swings_the_arms_against_the_legs(g1):
    from robolab.amp.biped import BipedGaitCfg, generate_walk

    cfg = BipedGaitCfg(duration=1.6)
    clip = generate_walk(cfg)
    model, data = g1.model, mujoco.MjData(g1.model)
    feet = g1.foot_body_ids
    home = np.array(g1_robot_cfg().default_joint_pos)
    data.qpos[3] = 1.0
    data.qpos[g1.qpos_adr] = home
    mujoco.mj_kinematics(model, data)
    home_mat = data.xmat[feet].copy()
    for q in clip.joint_pos[::7]:
        data.qpos[g1.qpos_adr] = q
        mujoco.mj_kinematics(model, data)
        np.testing.assert_allclose(data.xmat[feet], home_mat, atol=1e-4)  # each sole parallel to the ground
    height = clip.foot_pos[..., 2] - clip.foot_pos[..., 2].min(axis=0)
    assert height.max(axis=0) == pytest.approx([cfg.step_height] * 2, abs=1e-3)
    down = height < 1e-4
    assert down.any(axis=1).all(), "a walk: a foot is always on the ground"
    assert (~down[:, 0] & ~down[:, 1]).sum() == 0 and (down[:, 0] & down[:, 1]).any()
    # a planted foot moves backwards at the pelvis speed
    planted = down[1:, 0] & down[:-1, 0]
    foot_speed = np.diff(clip.foot_pos[:, 0, 0]) * clip.fps
    np.testing.assert_allclose(foot_speed[planted], -cfg.speed, atol=1e-3)
    # the left arm forward (negative pitch) while the right foot is forward
    left_arm = clip.joint_pos[:, JOINTS.index("left_shoulder_pitch_joint")]
    right_foot_x = clip.foot_pos[:, 1, 0]
    assert np.corrcoef(left_arm, right_foot_x)[0, 1] < -0.99


def test_the_walk_generator_refuses_bad_settings_in_one_line(tmp_path):
    from conftest import ROOT, run

    motion = [sys.executable, str(ROOT / "scripts" / "motion.py"), "generate", "--robot", "g1"]
    for args, message in (
        (["--gait", "trot"], "--gait=trot: the g1 has walk"),
        (["--duty", "0.4"], "--duty=0.4: in [0.5, 1)"),
        (["--speed", "1.9", "--period", "2.0"], "out of the legs' reach"),
    ):
        res = run([*motion, *args, "--output", str(tmp_path / "x.npz")])
        assert res.returncode == 2 and message in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.npz").exists()


def test_the_shipped_walk_is_what_the_generator_makes(tmp_path):
    """``robolab/amp/data/g1_walk.npz`` is ``scripts/motion.py generate --robot g1`` with its defaults."""
    from robolab.algorithms.ppo_amp import resolve_motion_file
    from robolab.amp.biped import BipedGaitCfg, generate_walk
    from robolab.amp.motion import load_clip

    cfg = g1_robot_cfg()
    shipped = load_clip(resolve_motion_file("g1_walk.npz"), cfg.joint_names, cfg.foot_bodies)
    fresh = generate_walk(BipedGaitCfg())
    np.testing.assert_allclose(shipped.joint_pos, fresh.joint_pos, atol=1e-9)
    np.testing.assert_allclose(shipped.foot_pos, fresh.foot_pos, atol=1e-9)


@pytest.mark.slow
def test_g1_amp_and_the_rough_teacher_distilled_into_a_blind_student_train(tmp_path):
    import json

    from conftest import TINY, run, train_cmd
    from test_terrain import SMALL_OVERRIDES

    logs = str(tmp_path)
    res = run(
        train_cmd("--task", "RoboLab-Velocity-Flat-G1-AMP-v0", *TINY, "--max_iterations", "2", "--log_root", logs)
    )
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(next(tmp_path.glob("g1_flat_amp/*/summary.json")).read_text())
    assert summary["iterations"] == 2 and "AMP/style_reward" in json.dumps(summary)
    small = ["agent.actor.hidden_dims=[32,32]", "agent.critic.hidden_dims=[32,32]"]
    teacher = ["--task", "RoboLab-Velocity-Rough-G1-Teacher-v0", *TINY, *SMALL_OVERRIDES, *small]
    res = run(train_cmd(*teacher, "--max_iterations", "1", "--log_root", logs))
    assert res.returncode == 0, res.stderr[-3000:]
    ppo_only = ("agent.algorithm.", "agent.actor.", "agent.critic.")
    student = ["--task", "RoboLab-Velocity-Rough-G1-Distillation-v0", *[a for a in TINY if not a.startswith(ppo_only)],
               *SMALL_OVERRIDES, "agent.teacher_experiment=g1_rough_teacher", "agent.teacher.hidden_dims=[32,32]",
               "agent.student.hidden_dims=[32,32]"]  # fmt: skip
    res = run(train_cmd(*student, "--max_iterations", "2", "--log_root", logs))
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(next(tmp_path.glob("g1_rough_distillation/*/summary.json")).read_text())
    assert summary["iterations"] == 2 and "Curriculum/terrain_level" in json.dumps(summary)


@pytest.mark.slow
def test_a_sweep_over_g1_seeds(tmp_path):
    from conftest import TINY, run, train_cmd

    sweep_dir = tmp_path / "sweep"
    cmd = train_cmd("-m", "--sweep_dir", str(sweep_dir), "--task", "RoboLab-Velocity-Flat-G1-v0", *TINY,
                    "--max_iterations", "1", "seed=1,2")  # fmt: skip
    res = run(cmd, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert len(list(sweep_dir.glob("*/logs/g1_flat/*/summary.json"))) == 2


def test_a_biped_term_on_four_feet_and_a_soft_ratio_out_of_range_are_one_line_errors():
    from robolab.envs.terms import RewardTermCfg
    from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

    cfg = Go2FlatEnvCfg(num_envs=2)
    cfg.rewards["biped"] = RewardTermCfg(func="feet_air_time_biped", weight=1.0, params={"threshold": 0.4})
    with pytest.raises(ValueError, match=r"env.rewards.biped: feet_air_time_biped needs 2 feet; .* has 4") as info:
        VelocityEnv(cfg)
    assert "\n" not in str(info.value)
    cfg = G1FlatEnvCfg(num_envs=2)
    cfg.rewards["ankle_limits"].params["soft_ratio"] = 1.5
    with pytest.raises(ValueError, match=r"env.rewards.ankle_limits.params.soft_ratio=1.5: must be in \(0, 1\]"):
        VelocityEnv(cfg)
