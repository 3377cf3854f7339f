"""The physics randomisation events (``robolab.envs.mdp.randomization``, per-foot friction): what they draw reaches
the simulated models on both embedded backends, from the seed alone, is recorded for the critic, and does what it
says to the torques and contacts; bad ranges are one-line errors."""

from __future__ import annotations

import dataclasses
import os

import mujoco
import numpy as np
import pytest
import torch

from robolab.envs import VelocityEnv
from robolab.envs.terms import EventTermCfg, ObsTermCfg
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")
REALISM = {
    "actuators": EventTermCfg(
        func="randomize_actuators",
        mode="startup",
        params={
            "kp_scale": (0.75, 1.25),
            "kd_scale": (0.5, 1.5),
            "strength_scale": (0.8, 1.0),
            "effort_scale": (0.9, 1.1),
        },
    ),
    "joint_dynamics": EventTermCfg(
        func="randomize_joint_dynamics",
        mode="startup",
        params={"friction_range": (0.0, 0.3), "damping_range": (0.0, 0.5), "armature_scale": (0.5, 1.5)},
    ),
    "base_com": EventTermCfg(
        func="randomize_base_com",
        mode="startup",
        params={"x_range": (-0.05, 0.05), "y_range": (-0.05, 0.05), "z_range": (-0.01, 0.01)},
    ),
    "link_masses": EventTermCfg(func="randomize_link_masses", mode="startup", params={"scale_range": (0.8, 1.2)}),
}
RECORDED = {
    "kp_scale": 12,
    "kd_scale": 12,
    "strength_scale": 12,
    "effort_scale": 12,
    "joint_friction": 12,
    "joint_damping": 12,
    "armature_scale": 12,
    "base_com_offset": 3,
    "link_mass_scale": None,  # every body but the world and the base
    "foot_friction": 4,
}


def realism_cfg(backend: str = "mujoco", num_envs: int = 6, num_variants: int | None = 3, seed: int = 0, **events):
    cfg = Go2FlatEnvCfg(num_envs=num_envs, seed=seed, device=DEVICE if backend == "warp" else "cpu")
    cfg.robot.actuators = {}  # servos: these tests read and step the backends' own actuators (tests/test_actuators.py
    # has the DC motors)
    cfg.backend.name, cfg.backend.num_variants = backend, num_variants
    cfg.backend.num_threads = 1
    cfg.events.update(events or REALISM)
    cfg.events["physics_material"].params["per_foot"] = True
    if not events:  # the whole set: the critic reads everything it draws
        critic = cfg.observations["critic"].terms
        for name in RECORDED:
            critic[name] = ObsTermCfg(func="physics_param", params={"name": name})
    return cfg


def _field(env, name: str) -> np.ndarray:
    """(num_envs, ...) the simulated model array ``name`` of every env, from either backend."""
    backend = env.backend
    if hasattr(backend, "_models"):
        return np.stack([getattr(model, name) for model in backend._models])
    return backend._fields[name].cpu().numpy()


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_what_the_events_draw_reaches_every_envs_model_and_the_critic(backend):
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    env = VelocityEnv(realism_cfg(backend))
    try:
        p, robot, model = env.physics_params, env.robot, env.robot.model
        for name, width in RECORDED.items():
            assert p[name].shape == (6, width or model.nbody - 2), name
        assert len({tuple(row) for row in p["kp_scale"].tolist()}) == 3  # one draw per variant, 2 envs each
        acts, dofs = robot.actuator_ids, robot.dof_adr
        kp = model.actuator_gainprm[acts, 0] * (p["kp_scale"] * p["strength_scale"]).cpu().numpy()
        np.testing.assert_allclose(_field(env, "actuator_gainprm")[:, acts, 0], kp, rtol=1e-5)
        np.testing.assert_allclose(_field(env, "actuator_biasprm")[:, acts, 1], -kp, rtol=1e-5)
        kd = -model.actuator_biasprm[acts, 2] * (p["kd_scale"] * p["strength_scale"]).cpu().numpy()
        np.testing.assert_allclose(_field(env, "actuator_biasprm")[:, acts, 2], -kd, rtol=1e-5)
        limit = model.actuator_forcerange[acts, 1] * (p["strength_scale"] * p["effort_scale"]).cpu().numpy()
        np.testing.assert_allclose(_field(env, "actuator_forcerange")[:, acts, 1], limit, rtol=1e-5)
        np.testing.assert_allclose(
            _field(env, "dof_frictionloss")[:, dofs],
            model.dof_frictionloss[dofs] + p["joint_friction"].cpu().numpy(),
            atol=1e-6,
        )
        np.testing.assert_allclose(
            _field(env, "dof_armature")[:, dofs],
            model.dof_armature[dofs] * p["armature_scale"].cpu().numpy(),
            rtol=1e-5,
        )
        base = robot.base_body_id
        np.testing.assert_allclose(
            _field(env, "body_ipos")[:, base], model.body_ipos[base] + p["base_com_offset"].cpu().numpy(), atol=1e-6
        )
        links = [b for b in range(model.nbody) if b not in (0, base)]
        mass = _field(env, "body_mass")
        np.testing.assert_allclose(
            mass[:, links], model.body_mass[links] * p["link_mass_scale"].cpu().numpy(), rtol=1e-5
        )
        np.testing.assert_allclose(mass[:, base], model.body_mass[base] + p["added_base_mass"].cpu().numpy(), rtol=1e-5)
        friction = _field(env, "geom_friction")[:, :, 0]
        assert (friction[:, model.geom_bodyid == 0] == 0).all()  # the ground defers to the robot's geoms
        for column, foot in enumerate(robot.foot_body_ids):
            np.testing.assert_allclose(
                friction[:, model.geom_bodyid == foot][:, 0], p["foot_friction"][:, column].cpu(), rtol=1e-6
            )
        # the critic reads what was drawn, the policy does not
        critic, policy = env.get_observations()["critic"], env.get_observations()["policy"]
        assert critic.shape[1] - policy.shape[1] >= sum(w or model.nbody - 2 for w in RECORDED.values())
        assert torch.equal(critic[:, -4:], p["foot_friction"])
    finally:
        env.close()


def test_the_same_seed_draws_the_same_robots_and_another_seed_others():
    first, again, other = (VelocityEnv(realism_cfg(seed=s)) for s in (0, 0, 1))
    for name in RECORDED:
        assert torch.equal(first.physics_params[name], again.physics_params[name]), name
        assert not torch.equal(first.physics_params[name], other.physics_params[name]), name
    np.testing.assert_array_equal(_field(first, "actuator_gainprm"), _field(again, "actuator_gainprm"))
    for env in (first, again, other):
        env.close()


def test_both_backends_simulate_the_same_randomised_robots():
    """In the air (no contacts, whose solutions part the two solvers within steps), every drawn parameter shapes the
    motion: the gains and strength the joints' response, damping, friction and armature their speed, the masses and
    the centre of mass how the body turns. Both backends must fly each env's own robot the same way (MuJoCo C
    ignored a moved centre of mass on the Go2's base until its compile-time same-frame flag was cleared)."""
    pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    envs = [VelocityEnv(realism_cfg(name, num_envs=3, num_variants=None)) for name in ("mujoco", "warp")]
    try:
        torch.testing.assert_close(
            envs[0].physics_params["kp_scale"], envs[1].physics_params["kp_scale"].cpu(), atol=0, rtol=0
        )
        qpos = torch.tensor(envs[0].robot.model.key_qpos[0], dtype=torch.float32).repeat(3, 1)
        qpos[:, 2] = 3.0
        g = torch.Generator().manual_seed(0)
        targets = [qpos[:, 7:] + 0.4 * torch.randn(3, 12, generator=g) for _ in range(8)]
        for env in envs:
            backend = env.backend
            backend.reset(torch.ones(3, dtype=torch.bool), qpos.to(env.device), torch.zeros(3, backend.robot.model.nv))
            for target in targets:
                backend.step(target.to(env.device), env.cfg.decimation)
        (c, warp), (c_vel, warp_vel) = (
            (envs[0].backend.qpos, envs[1].backend.qpos.cpu()),
            (envs[0].backend.qvel, envs[1].backend.qvel.cpu()),
        )
        # 1e-6 apart without joint friction; dry friction is a constraint the two solvers meet within ~1e-3
        torch.testing.assert_close(warp, c, atol=2e-3, rtol=0)
        torch.testing.assert_close(warp_vel, c_vel, atol=0.2, rtol=0)
        assert (c[:, 7:] - qpos[:, 7:]).abs().max() > 0.1  # the joints did move
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_the_effort_scale_caps_every_joint_torque_at_its_share_of_the_limit(backend):
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    effort = EventTermCfg(func="randomize_actuators", mode="startup", params={"effort_scale": (0.1, 0.1)})
    env = VelocityEnv(realism_cfg(backend, num_envs=4, actuators=effort))
    try:
        limit = torch.as_tensor(env.robot.model.actuator_forcerange[env.robot.actuator_ids, 1], dtype=torch.float32)
        peak = torch.zeros(4, 12)
        for sign in (1.0, -1.0):  # far targets: every joint pushes as hard as it may
            for _ in range(3):
                env.step(torch.full((4, 12), 4.0 * sign, device=env.device))
                peak = torch.maximum(peak, env.backend.joint_torques.abs().cpu())
        assert (peak <= 0.1 * limit + 1e-4).all()
        assert (peak >= 0.1 * limit - 1e-4).float().mean() > 0.5  # and most reach it
    finally:
        env.close()


def test_a_foot_meets_the_ground_with_its_own_friction():
    env = VelocityEnv(realism_cfg(num_envs=2, num_variants=None))
    try:
        for _ in range(25):  # land and stand
            env.step(torch.zeros(2, 12))
        model, data = env.backend.render_data(0)
        mujoco.mj_forward(model, data)
        feet = {int(b): column for column, b in enumerate(env.robot.foot_body_ids)}
        touched = 0
        for contact in data.contact[: data.ncon]:
            bodies = [int(model.geom_bodyid[g]) for g in contact.geom]
            foot = next((b for b in bodies if b in feet), None)
            if foot is not None and 0 in bodies:
                assert contact.friction[0] == pytest.approx(
                    env.physics_params["foot_friction"][0, feet[foot]].item(), rel=1e-6
                )
                touched += 1
        assert touched >= 2
    finally:
        env.close()


@pytest.mark.parametrize(
    "event, params, message",
    [
        ("randomize_actuators", {"kp_scale": (-0.5, 1.0)}, "kp_scale=[-0.5, 1.0]: the low end must be >= 0"),
        ("randomize_joint_dynamics", {"damping_range": (0.5, 0.1)}, "damping_range=[0.5, 0.1]: expected [low, high]"),
        ("randomize_link_masses", {"scale_range": (0.0, 1.0)}, "scale_range=[0.0, 1.0]: the low end must be > 0"),
        ("randomize_link_masses", {"scale_range": (0.9, 1.1), "bodies": ["tail"]}, "bodies: 'tail' matches none"),
        ("randomize_actuators", {"joints": ["elbow.*"]}, "joints: 'elbow.*' matches none of the robot's joints"),
    ],
)
def test_a_bad_range_is_a_one_line_error_naming_the_term_and_value(event, params, message):
    cfg = realism_cfg(num_envs=2, bad=EventTermCfg(func=event, mode="startup", params=params))
    with pytest.raises(ValueError) as err:
        VelocityEnv(cfg)
    assert message in str(err.value) and "env.events.bad" in str(err.value) and "\n" not in str(err.value)


# --- time: action and observation delays, IMU bias ----------------------------------------------------------------
def test_a_delay_line_gives_each_env_its_own_past_and_restarts_an_episode_without_the_last_ones():
    from robolab.envs.delay import DelayLine

    line = DelayLine(3, 2, torch.device("cpu"))
    line.restart(torch.ones(3, dtype=torch.bool), torch.tensor([0, 1, 2]))
    out = [line(torch.full((3, 1), float(t)))[:, 0].tolist() for t in range(4)]
    assert out == [[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 2, 1]]  # the first value stands in for the steps before it
    line.restart(torch.tensor([False, False, True]), torch.tensor([0, 0, 1]))
    assert line(torch.full((3, 1), 9.0))[:, 0].tolist() == [9, 3, 9]  # env 2's new episode: nothing from before


def _time_cfg(**events) -> object:
    cfg = Go2FlatEnvCfg(num_envs=4, seed=0)
    cfg.robot.actuators = {}  # servos: the delay test reads the targets the backend's servos got
    cfg.backend.num_threads = 1
    cfg.events.update(events)
    return cfg


def test_an_action_delay_sends_the_motors_the_action_of_steps_before():
    delay = EventTermCfg(func="randomize_action_delay", mode="reset", params={"steps_range": (0, 2)})
    env = VelocityEnv(_time_cfg(action_delay=delay))
    try:
        steps = env.physics_params["action_delay"].long()
        assert set(steps.tolist()) <= {0, 1, 2} and len(set(steps.tolist())) > 1
        g = torch.Generator().manual_seed(0)
        sent = []
        for t in range(4):
            action = 0.1 * torch.randn(4, 12, generator=g)
            sent.append(action)
            env.step(action)
            ctrl = torch.as_tensor(env.backend._ctrl[:, 0, env.robot.actuator_ids], dtype=torch.float32)
            for i in range(4):
                expected = sent[max(t - int(steps[i]), 0)][i]
                torch.testing.assert_close(
                    ctrl[i], env.default_joint_pos + env.cfg.action_scale * expected, atol=1e-6, rtol=0
                )
    finally:
        env.close()


def test_an_observation_delay_shows_the_policy_the_frame_of_steps_before_and_the_critic_the_delay():
    cfg = _time_cfg()
    policy = cfg.observations["policy"]
    policy.enable_corruption, policy.delay_range = False, (1, 1)
    cfg.observations["now"] = dataclasses.replace(policy, delay_range=(0, 0))
    cfg.observations["critic"].terms["policy_delay"] = ObsTermCfg(func="physics_param", params={"name": "policy_delay"})
    env = VelocityEnv(cfg)
    try:
        previous = env.get_observations()["now"]
        for _ in range(3):
            obs, _, dones, _ = env.step(torch.zeros(4, 12))
            assert not dones.any()
            torch.testing.assert_close(obs["policy"], previous, atol=0, rtol=0)
            previous = obs["now"]
        assert (obs["critic"][:, -1] == 1.0).all()
    finally:
        env.close()


def test_an_imu_bias_offsets_the_gyro_and_tilts_gravity_and_is_redrawn_each_episode():
    imu = EventTermCfg(
        func="randomize_imu_bias", mode="reset", params={"gyro_range": (-0.1, 0.1), "tilt_range": (-0.05, 0.05)}
    )
    cfg = _time_cfg(imu=imu)
    cfg.observations["policy"].terms["base_ang_vel"] = ObsTermCfg(func="imu_ang_vel")
    cfg.observations["policy"].terms["projected_gravity"] = ObsTermCfg(func="imu_projected_gravity")
    cfg.observations["policy"].enable_corruption = False
    env = VelocityEnv(cfg)
    try:
        bias, tilt = env.physics_params["imu_gyro_bias"].clone(), env.physics_params["imu_tilt"].clone()
        assert bias.abs().max() <= 0.1 and bias.abs().min() > 0 and tilt.abs().max() <= 0.05
        policy = env.get_observations()["policy"]
        torch.testing.assert_close(policy[:, 3:6], env.state.base_ang_vel + bias, atol=1e-6, rtol=0)
        roll, pitch = tilt[:, 0], tilt[:, 1]
        for i in range(4):  # gravity in the frame of an IMU turned by roll about x, then pitch about the new y
            cr, sr, cp, sp = (
                float(f(a[i]))
                for a, f in ((roll, torch.cos), (roll, torch.sin), (pitch, torch.cos), (pitch, torch.sin))
            )
            rx = torch.tensor([[1.0, 0, 0], [0, cr, -sr], [0, sr, cr]])
            ry = torch.tensor([[cp, 0, sp], [0, 1.0, 0], [-sp, 0, cp]])
            torch.testing.assert_close(policy[i, 6:9], (rx @ ry).T @ env.state.projected_gravity[i], atol=1e-6, rtol=0)
        env.reset()
        assert not torch.equal(env.physics_params["imu_gyro_bias"], bias)
    finally:
        env.close()


def test_the_same_seed_draws_the_same_delays():
    delay = EventTermCfg(func="randomize_action_delay", mode="reset", params={"steps_range": (0, 3)})
    runs = []
    for _ in range(2):
        cfg = _time_cfg(action_delay=delay)
        cfg.observations["policy"].delay_range = (0, 2)
        env = VelocityEnv(cfg)
        runs.append((env.physics_params["action_delay"].clone(), env.physics_params["policy_delay"].clone()))
        env.close()
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"action_delay": EventTermCfg(func="randomize_action_delay", mode="reset", params={"steps_range": (2, 1)})},
            "env.events.action_delay.params.steps_range=[2, 1]: expected [low, high], two whole numbers with 0 <= low",
        ),
        (
            {"delay_range": (0.5, 1)},
            "env.observations.policy.delay_range=[0.5, 1]: expected [low, high], two whole numbers",
        ),
    ],
)
def test_a_bad_delay_is_a_one_line_error(change, message):
    cfg = _time_cfg(**{k: v for k, v in change.items() if k != "delay_range"})
    if "delay_range" in change:
        cfg.observations["policy"].delay_range = change["delay_range"]
    with pytest.raises(ValueError) as err:
        VelocityEnv(cfg)
    assert message in str(err.value) and "\n" not in str(err.value)


# --- the command curriculum ---------------------------------------------------------------------------------------
def _curriculum_cfg(threshold: float, **params) -> object:
    from robolab.envs.terms import CurriculumTermCfg

    cfg = Go2FlatEnvCfg(num_envs=4, seed=0, episode_length_s=0.1)  # 5-step episodes
    cfg.backend.num_threads = 1
    cfg.commands["base_velocity"].params.update({"lin_vel_x": (-0.5, 0.5), "ang_vel_z": (-0.5, 0.5)})
    limits = {"lin_vel_x": (-1.0, 2.0), "ang_vel_z": (-0.5, 0.5)}
    cfg.curricula["commands"] = CurriculumTermCfg(
        func="command_ranges", params={"limits": limits, "step": 0.2, "error_threshold": threshold, **params}
    )
    return cfg


def test_the_command_curriculum_widens_the_ranges_while_tracking_is_good_up_to_the_limits_and_resumes():
    env = VelocityEnv(_curriculum_cfg(threshold=100.0))  # any tracking is good enough
    try:
        for _ in range(5):  # one episode: one widening
            _, _, _, extras = env.step(torch.zeros(4, 12))
        ranges = env.command_terms["base_velocity"].ranges
        torch.testing.assert_close(ranges["lin_vel_x"], torch.tensor([-0.7, 0.7]), atol=1e-6, rtol=0)
        torch.testing.assert_close(
            ranges["ang_vel_z"], torch.tensor([-0.5, 0.5]), atol=1e-6, rtol=0
        )  # already at its limits
        assert float(extras["log"]["Curriculum/commands/lin_vel_x_max"]) == pytest.approx(0.7, abs=1e-6)
        for _ in range(50):
            env.step(torch.zeros(4, 12))
        torch.testing.assert_close(ranges["lin_vel_x"], torch.tensor([-1.0, 2.0]), atol=1e-6, rtol=0)
        forward = env.command("base_velocity")[:, 0]
        assert forward.min() >= -1.0 and forward.max() <= 2.0
        saved = env.state_dict()
        assert torch.equal(saved["command.base_velocity.lin_vel_x"], torch.tensor([-1.0, 2.0]))
    finally:
        env.close()
    fresh = VelocityEnv(_curriculum_cfg(threshold=100.0))
    try:
        fresh.load_state_dict(saved)
        torch.testing.assert_close(
            fresh.command_terms["base_velocity"].ranges["lin_vel_x"], torch.tensor([-1.0, 2.0]), atol=1e-6, rtol=0
        )
    finally:
        fresh.close()


def test_the_command_curriculum_holds_the_ranges_while_tracking_is_poor():
    env = VelocityEnv(_curriculum_cfg(threshold=1e-6))
    try:
        for _ in range(20):
            env.step(torch.zeros(4, 12))
        torch.testing.assert_close(
            env.command_terms["base_velocity"].ranges["lin_vel_x"], torch.tensor([-0.5, 0.5]), atol=1e-6, rtol=0
        )
    finally:
        env.close()


def test_a_command_limit_that_does_not_hold_the_start_range_is_a_one_line_error():
    cfg = _curriculum_cfg(threshold=0.25)
    cfg.curricula["commands"].params["limits"] = {"lin_vel_x": (0.0, 2.0)}
    with pytest.raises(ValueError) as err:
        VelocityEnv(cfg)
    message = str(err.value)
    assert (
        "env.curricula.commands" in message
        and "limits.lin_vel_x=[0.0, 2.0]: must hold the command's range [-0.5, 0.5]" in message
    )


@pytest.mark.parametrize(
    "params, message",
    [
        ({"command_name": "heading"}, "command_name='heading': no velocity command of that name (have: base_velocity)"),
        ({"step": 0.0}, "step=0.0, error_threshold=0.25: both must be > 0"),
        ({"limits": {"lin_vel_z": (-1.0, 1.0)}}, "limits: 'lin_vel_z' is no range of the command (have: lin_vel_x"),
    ],
)
def test_a_bad_command_curriculum_setting_is_a_one_line_error(params, message):
    cfg = _curriculum_cfg(threshold=0.25)
    cfg.curricula["commands"].params.update(params)
    with pytest.raises(ValueError) as err:
        VelocityEnv(cfg)
    assert "env.curricula.commands" in str(err.value) and message in str(err.value) and "\n" not in str(err.value)


def test_actuators_that_are_no_position_servos_are_named_and_an_unknown_model_field_is_refused():
    from robolab.envs.mdp.randomization import randomize_actuators

    env = VelocityEnv(realism_cfg(num_envs=2, noop=EventTermCfg(func="randomize_base_com", mode="startup")))
    try:
        first = env.robot.actuator_ids[0]
        env.robot.model.actuator_biastype[first] = mujoco.mjtBias.mjBIAS_NONE  # a motor, not a servo
        with pytest.raises(ValueError, match=r"randomize_actuators: joints \['FL_hip_joint'\] are not driven by"):
            randomize_actuators(env, torch.ones(2, dtype=torch.bool), kp_scale=(0.9, 1.1))
        with pytest.raises(
            ValueError, match="model field 'body_pos' cannot be set per variant; these can: geom_friction"
        ):
            env.backend.set_model_field("body_pos", np.array([1]), torch.zeros(env.backend.num_variants, 1, 3))
    finally:
        env.close()
