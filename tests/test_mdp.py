"""MDP terms against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from robolab.envs.math import heading, quat_rotate, quat_rotate_inverse, yaw_quat
from robolab.envs.mdp import kernels as mdp
from robolab.envs.state import RobotState


def upright_state(n=2, joint_dim=12):
    qpos = torch.zeros(n, 7 + joint_dim)
    qpos[:, 3] = 1.0
    qvel = torch.zeros(n, 6 + joint_dim)
    return qpos, qvel


def test_upright_robot_projects_gravity_straight_down():
    qpos, qvel = upright_state()
    s = RobotState.from_generalised(qpos, qvel, torch.arange(7, 19), torch.arange(6, 18))
    torch.testing.assert_close(s.projected_gravity, torch.tensor([[0.0, 0.0, -1.0]] * 2))
    assert torch.all(mdp.flat_orientation_l2(s.projected_gravity) == 0)


def test_rolled_robot_sees_gravity_sideways():
    qpos, qvel = upright_state(1)
    qpos[0, 3:7] = torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])  # 90 deg roll about x
    s = RobotState.from_generalised(qpos, qvel, torch.arange(7, 19), torch.arange(6, 18))
    torch.testing.assert_close(s.projected_gravity, torch.tensor([[0.0, -1.0, 0.0]]), atol=1e-6, rtol=0)
    assert mdp.flat_orientation_l2(s.projected_gravity).item() == pytest.approx(1.0, abs=1e-6)


def test_base_linear_velocity_is_expressed_in_the_body_frame():
    qpos, qvel = upright_state(1)
    qpos[0, 3:7] = yaw_quat(torch.tensor([math.pi / 2]))[0]  # facing world +y
    qvel[0, :3] = torch.tensor([0.0, 1.0, 0.0])  # moving along world +y = body forward
    s = RobotState.from_generalised(qpos, qvel, torch.arange(7, 19), torch.arange(6, 18))
    torch.testing.assert_close(s.base_lin_vel, torch.tensor([[1.0, 0.0, 0.0]]), atol=1e-6, rtol=0)


def test_quaternion_helpers_invert_each_other_and_heading_reads_yaw():
    q = torch.nn.functional.normalize(torch.randn(16, 4), dim=1)
    v = torch.randn(16, 3)
    torch.testing.assert_close(quat_rotate(q, quat_rotate_inverse(q, v)), v, atol=1e-5, rtol=0)
    yaw = torch.tensor([0.3, -2.0])
    torch.testing.assert_close(heading(yaw_quat(yaw)), yaw)


def test_tracking_rewards_peak_at_zero_error_and_fall_with_error():
    command = torch.tensor([[1.0, 0.5, 0.2]] * 3)
    vel = torch.tensor([[1.0, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])
    r = mdp.track_lin_vel_xy_exp(command, vel, std=0.5)
    assert r[0].item() == 1.0
    assert r[1].item() == pytest.approx(math.exp(-0.25 / 0.25), rel=1e-6)  # error^2 = 0.25
    assert r[0] > r[1] > r[2]
    ang = torch.tensor([[0.0, 0.0, 0.2], [0.0, 0.0, 0.7], [0.0, 0.0, -1.0]])
    ra = mdp.track_ang_vel_z_exp(command, ang, std=0.5)
    assert ra[0].item() == 1.0 and ra[0] > ra[1] > ra[2]


def test_penalties_are_sums_of_squares():
    assert mdp.lin_vel_z_l2(torch.tensor([[0.0, 0.0, 2.0]])).item() == 4.0
    assert mdp.ang_vel_xy_l2(torch.tensor([[1.0, 2.0, 5.0]])).item() == 5.0
    assert mdp.l2(torch.tensor([[1.0, -2.0, 3.0]])).item() == 14.0
    assert mdp.undesired_contacts(torch.tensor([[0.5, 2.0, 3.0, 0.0]]), threshold=1.0).item() == 2.0


def test_feet_air_time_pays_at_touchdown_only_while_moving():
    last_air = torch.tensor([[0.7, 0.2, 0.0, 0.0]] * 2)
    first_contact = torch.tensor([[True, True, False, False]] * 2)
    moving = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.05, 0.0]])
    r = mdp.feet_air_time(last_air, first_contact, moving, threshold=0.5)
    assert r[0].item() == pytest.approx((0.7 - 0.5) + (0.2 - 0.5), abs=1e-6)
    assert r[1].item() == 0.0  # command below 0.1 m/s: no air-time reward


def test_tracking_error_metric_is_euclidean():
    assert mdp.lin_vel_tracking_error(torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 9.0]])).item() == 1.0


def test_gait_scores_from_foot_groups():
    from robolab.envs.gaits import GaitScores
    from robolab.tasks.velocity.go2.env_cfgs import quadruped_gaits

    feet = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    contact = torch.tensor([[a, b, c, d] for a in (0, 1) for b in (0, 1) for c in (0, 1) for d in (0, 1)]).bool()
    scores = GaitScores(quadruped_gaits(), feet, torch.device("cpu"))(contact)
    fl, fr, rl, rr = contact.unbind(dim=1)
    trot = (fl == rr) & (fr == rl) & (fl != fr)  # diagonals together, the two diagonals opposite
    pace = (fl == rl) & (fr == rr) & (fl != fr)
    assert torch.equal(scores, torch.stack((trot, pace), dim=1)) and int(trot.sum()) == int(pace.sum()) == 2
    # a biped walks with its two feet in opposite states; any number of feet and patterns
    walk = GaitScores({"walk": [["L"], ["R"]], "hop": [["L", "R"], ["L"]]}, ["L", "R"], torch.device("cpu"))
    both = walk(torch.tensor([[True, False], [True, True], [False, True]]))
    assert both[:, 0].tolist() == [True, False, True]
    with pytest.raises(ValueError, match=r"env.gaits.run=.*groups of feet from"):
        GaitScores({"run": [["FL_foot", "XX_foot"], ["FR_foot"]]}, feet, torch.device("cpu"))
