"""The built-in Go2-class robot and loading a user MJCF through the same path."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from conftest import go2_robot, go2_servo_robot
from robolab.assets import load_robot
from robolab.assets.go2 import build_go2_spec


def test_go2_has_actuated_joints_limits_sensors_and_home_key():
    robot = load_robot(go2_servo_robot())
    m = robot.model
    assert m.nu == 12 and m.nq == 19 and m.nv == 18
    assert 14.0 < m.body_mass.sum() < 16.5  # Go2 is about 15 kg
    assert np.all(m.actuator_forcelimited[robot.actuator_ids] == 1)
    np.testing.assert_allclose(m.actuator_forcerange[robot.actuator_ids, 1], go2_robot().torque_limits)
    np.testing.assert_allclose(robot.effort_limits, go2_robot().torque_limits)
    # The task's Go2 has DC motors: its actuators pass the torque the env computes straight through.
    explicit = load_robot(go2_robot())
    acts, m = explicit.actuator_ids, explicit.model
    assert list(explicit.actuator_groups) == ["legs"] and explicit.actuator_groups["legs"].tolist() == list(range(12))
    assert np.all(m.actuator_biastype[acts] == mujoco.mjtBias.mjBIAS_NONE) and np.all(m.actuator_gainprm[acts, 0] == 1)
    assert not m.actuator_forcelimited[acts].any() and not m.actuator_ctrllimited[acts].any()
    np.testing.assert_allclose(explicit.effort_limits, go2_robot().torque_limits)
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "imu") >= 0
    feet = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"{leg}_foot") for leg in ("FL", "FR", "RL", "RR")]
    for body in feet:
        geom = m.body_geomadr[body]
        assert m.geom_type[geom] == mujoco.mjtGeom.mjGEOM_SPHERE
    assert m.nkey == 1 and mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "home") == 0
    assert m.opt.timestep == pytest.approx(0.005, rel=1e-6)


def test_go2_stands_on_its_feet_under_pd_hold():
    robot = load_robot(go2_servo_robot())
    m, d = robot.model, mujoco.MjData(robot.model)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.ctrl[robot.actuator_ids] = go2_robot().default_joint_pos
    for _ in range(400):  # 2 s
        mujoco.mj_step(m, d)
    assert 0.2 < d.qpos[2] < 0.36
    foot_forces = [np.linalg.norm(d.sensordata[a : a + 3]) for a in robot.foot_sensor_adr]
    assert sum(foot_forces) == pytest.approx(m.body_mass.sum() * 9.81, rel=0.1)  # feet carry the weight
    assert all(np.linalg.norm(d.sensordata[a : a + 3]) == 0 for a in robot.termination_sensor_adr)


def test_user_mjcf_with_renamed_joints_loads_through_config(tmp_path):
    xml = build_go2_spec(go2_robot()).to_xml().replace("FL_hip_joint", "front_left_hip")
    path = tmp_path / "robot.xml"
    path.write_text(xml)
    names = go2_robot().joint_names
    names[0] = "front_left_hip"
    robot = load_robot(go2_robot(mjcf_path=str(path), joint_names=names))
    assert robot.model.nu == 12
    jid = mujoco.mj_name2id(robot.model, mujoco.mjtObj.mjOBJ_JOINT, "front_left_hip")
    assert robot.qpos_adr[0] == robot.model.jnt_qposadr[jid]


def test_missing_mjcf_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="robot.mjcf_path=.*nope.xml.*no such file"):
        load_robot(go2_robot(mjcf_path=str(tmp_path / "nope.xml")))


def test_malformed_mjcf_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text("<mujoco><worldbody><body></mujoco>")
    with pytest.raises(ValueError, match="not a valid MJCF file") as info:
        load_robot(go2_robot(mjcf_path=str(path)))
    assert "\n" not in str(info.value)


def test_unknown_joint_name_is_named_in_the_error():
    names = go2_robot().joint_names
    names[3] = "no_such_joint"
    with pytest.raises(ValueError, match="joint 'no_such_joint' is not in the model"):
        load_robot(go2_robot(joint_names=names))
