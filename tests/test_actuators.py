"""Explicit actuator models (``robolab.envs.actuators``): a network that computes PD drives the robot along the PD
trajectory; a DC motor's torque follows its torque-speed line and limits the joints' speed; stepping the physics one
step at a time keeps the backends' per-control-step readings; actuator randomisation reaches explicit joints; bad
settings are one-line errors."""

from __future__ import annotations

import os

import mujoco
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from robolab.assets.loader import drive_by_torque
from robolab.assets.robot_cfg import ActuatorCfg
from robolab.config import build_env_cfg
from robolab.envs import VelocityEnv
from robolab.envs.backends import make_backend
from robolab.envs.terms import EventTermCfg
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")
KP, KD = 25.0, 0.5  # the Go2's gains (go2_robot_cfg)


def go2_cfg(backend: str = "mujoco", num_envs: int = 8, **actuators: ActuatorCfg) -> Go2FlatEnvCfg:
    cfg = Go2FlatEnvCfg(num_envs=num_envs, seed=3, device=DEVICE if backend == "warp" else "cpu")
    cfg.backend.name, cfg.backend.num_threads = backend, 1
    cfg.robot.actuators = dict(actuators)
    return cfg


def pd_network(path: str, kp: float = KP, kd: float = KD, steps: int = 1) -> str:
    """A TorchScript MLP (one linear layer) that computes ``kp e - kd qdot`` from the newest error and velocity,
    ignoring ``steps - 1`` older ones (inputs ordered pos_vel)."""
    layer = torch.nn.Linear(2 * steps, 1, bias=False)
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight[0, 0], layer.weight[0, steps] = kp, -kd
    torch.jit.save(torch.jit.script(torch.nn.Sequential(layer)), path)
    return path


def rollout(cfg, steps: int = 25, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Joint positions and torques after each of ``steps`` control steps of random actions (the same for every cfg)."""
    env = VelocityEnv(cfg)
    generator = torch.Generator().manual_seed(seed)
    positions, torques = [], []
    try:
        for _ in range(steps):
            env.step(torch.randn(env.num_envs, env.num_actions, generator=generator))
            positions.append(env.backend.qpos[:, env.qpos_adr].cpu().clone())
            torques.append(env.backend.joint_torques.cpu().clone())
    finally:
        env.close()
    return torch.stack(positions), torch.stack(torques)


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_a_network_that_computes_pd_gives_the_pd_trajectory(backend, tmp_path):
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    # Three steps of history in, two ignored: the history's order and the input layout must be right for this to hold.
    path = pd_network(str(tmp_path / "pd.pt"), steps=3)
    network = ActuatorCfg(model="network", network_path=path, input_idx=[0, 1, 2])
    pd_pos, pd_torque = rollout(go2_cfg(backend, legs=ActuatorCfg(model="ideal_pd")))
    net_pos, net_torque = rollout(go2_cfg(backend, legs=network))
    assert pd_pos.abs().max() > 0.3  # the robot moved
    torch.testing.assert_close(net_pos, pd_pos, rtol=0, atol=1e-5)
    torch.testing.assert_close(net_torque, pd_torque, rtol=0, atol=1e-3)
    # A network that reads an older step than the newest is another actuator: the trajectory differs.
    late = ActuatorCfg(model="network", network_path=pd_network(str(tmp_path / "late.pt")), input_idx=[1])
    late_pos, _ = rollout(go2_cfg(backend, legs=late))
    assert (late_pos - pd_pos).abs().max() > 1e-2


def test_an_explicit_pd_stays_near_the_servo_and_caps_at_the_torque_limit():
    """The explicit PD is the servo's law computed at the start of each physics step, where MuJoCo's servo folds its
    damping into the implicit integration: the same motion, a few hundredths of a radian apart on average (contacts
    amplify the difference: 0.2 rad at most in 25 steps)."""
    servo_pos, _ = rollout(go2_cfg())
    pd_pos, pd_torque = rollout(go2_cfg(legs=ActuatorCfg(model="ideal_pd")))
    assert (pd_pos - servo_pos).abs().mean() < 0.05
    assert (pd_pos - servo_pos).abs().max() < 0.5
    limits = torch.tensor([23.7, 23.7, 45.43] * 4)
    assert (pd_torque.abs() <= limits + 1e-4).all()
    assert (pd_torque.abs() >= limits - 1e-4).any()  # random actions saturate some joint


def test_both_backends_fly_the_dc_motor_go2_alike():
    """In the air (contacts part the two solvers, and MuJoCo C's one-step rollouts start their solver cold), the
    explicit loop drives the same motion on MuJoCo C and MuJoCo Warp."""
    pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    envs = [VelocityEnv(go2_cfg(name, num_envs=4, legs=ActuatorCfg(velocity_limit=3.0))) for name in ("mujoco", "warp")]
    try:
        qpos = torch.tensor(envs[0].robot.model.key_qpos[0], dtype=torch.float32).repeat(4, 1)
        qpos[:, 2] = 3.0
        for env in envs:
            env.backend.reset(torch.ones(4, dtype=torch.bool), qpos.to(env.device), torch.zeros(4, 18))
        generator = torch.Generator().manual_seed(0)
        for _ in range(10):
            targets = qpos[:, 7:] + 0.4 * torch.randn(4, 12, generator=generator)
            for env in envs:
                env.step_physics(targets.to(env.device))
        c, warp = (env.backend.qpos.cpu() for env in envs)
        torch.testing.assert_close(warp, c, atol=1e-4, rtol=0)
        assert (c[:, 7:] - qpos[:, 7:]).abs().max() > 0.1  # the joints moved
    finally:
        for env in envs:
            env.close()


def test_a_dc_motor_without_a_speed_limit_is_the_ideal_pd():
    pd_pos, pd_torque = rollout(go2_cfg(legs=ActuatorCfg(model="ideal_pd")))
    dc_pos, dc_torque = rollout(go2_cfg(legs=ActuatorCfg(model="dc_motor", velocity_limit=None)))
    torch.testing.assert_close(dc_pos, pd_pos, rtol=0, atol=0)
    torch.testing.assert_close(dc_torque, pd_torque, rtol=0, atol=0)


def test_a_dc_motors_torque_follows_its_torque_speed_line():
    env = VelocityEnv(go2_cfg(num_envs=4, legs=ActuatorCfg(model="dc_motor", velocity_limit=30.0)))
    try:
        limits = torch.tensor([23.7, 23.7, 45.43] * 4)
        big = torch.full((4, 12), 10.0)  # rad of error: the PD asks for far more than any limit
        target = torch.zeros(4, 12)
        vel = torch.tensor([0.0, 15.0, -15.0, 45.0])[:, None].expand(4, 12)
        push = env.explicit_actuators.controls(target + big, target, vel)
        pull = env.explicit_actuators.controls(target - big, target, vel)
        # At rest the stall torque (the limit); at half the no-load speed half of it forwards, the limit backwards;
        # beyond the no-load speed it only brakes.
        torch.testing.assert_close(push[0], limits, rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(push[1], limits * 0.5, rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(pull[1], -limits, rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(push[2], limits, rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(pull[2], -limits * 0.5, rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(push[3], torch.zeros(12), rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(pull[3], -limits, rtol=1e-6, atol=1e-5)
        # What a deployment reads of the simulated motors.
        described = env.io_descriptors()["articulation"]["actuators"]
        assert described == {
            "legs": {
                "joints": env.cfg.robot.joint_names,
                "model": "dc_motor",
                "saturation_effort": None,
                "velocity_limit": 30.0,
            }
        }
    finally:
        env.close()


def test_a_slow_dc_motor_holds_the_joints_near_its_no_load_speed():
    """Random actions drive the PD's joints at 9 rad/s (the median over joints and steps); a motor whose torque
    vanishes at 3 rad/s holds them near 3 (landings and the other legs still push some past it)."""

    def median_speed(cfg) -> float:
        env = VelocityEnv(cfg)
        generator = torch.Generator().manual_seed(1)
        speeds = []
        try:
            for _ in range(20):
                env.step(3 * torch.randn(env.num_envs, env.num_actions, generator=generator))
                speeds.append(env.backend.qvel[:, env.dof_adr].abs().median().item())
        finally:
            env.close()
        return float(np.median(speeds))

    assert median_speed(go2_cfg(legs=ActuatorCfg(model="ideal_pd"))) > 6.0
    assert median_speed(go2_cfg(legs=ActuatorCfg(model="dc_motor", velocity_limit=3.0))) < 3.6


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_one_physics_step_at_a_time_reads_as_one_control_step(backend):
    """Four calls of one physics step (the explicit actuators' loop) read as one control step: each contact group's
    peak is the largest force of the four physics steps, a non-finite state at any of them is flagged, and the state
    is the one call of four's (exactly on MuJoCo Warp; on MuJoCo C within the solver's tolerance, as each
    ``mujoco.rollout`` call starts its solver without the last step's warm start, and contacts amplify that)."""
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")
    cfg = go2_cfg(backend, num_envs=4)
    whole, split = (make_backend(cfg.backend, cfg.robot, cfg.sim_dt, 4, cfg.device) for _ in range(2))
    targets = torch.tensor(cfg.robot.default_joint_pos).expand(4, -1) + 0.3 * torch.randn(4, 12)
    touched = False
    for _ in range(30):  # the robots fall from their start height and land: contacts peak within control steps
        whole.step(targets, 4)
        instants = {group: [] for group in ("foot", "undesired", "termination")}
        for k in range(4):
            split.step(targets, 1, first_substep=k == 0)
            for group, seen in instants.items():
                seen.append(split.contact_force_vectors(group).norm(dim=-1).cpu())
        for group, seen in instants.items():
            peak = torch.stack(seen).max(dim=0).values
            torch.testing.assert_close(split.contact_forces(group).cpu(), peak, rtol=1e-5, atol=1e-4)
        touched |= bool((torch.stack(instants["foot"]).max(dim=0).values > 10.0).any())
        tolerance = 1e-5 if backend == "warp" else 5e-2
        torch.testing.assert_close(split.qpos.cpu(), whole.qpos.cpu(), rtol=0, atol=tolerance)
        assert not split.non_finite.any()
    assert touched  # the feet touched down
    split.corrupt(torch.tensor([1]))
    split.step(targets, 1, first_substep=True)
    split.step(targets, 1, first_substep=False)
    assert split.non_finite.tolist() == [False, True, False, False]
    whole.close()
    split.close()


def test_actuator_randomisation_reaches_explicit_joints():
    cfg = go2_cfg(num_envs=6, legs=ActuatorCfg(model="dc_motor", velocity_limit=30.0, joints=[".*_(thigh|calf)_joint"]))
    cfg.backend.num_variants = 3
    cfg.events["actuators"] = EventTermCfg(
        func="randomize_actuators",
        mode="startup",
        params={"kp_scale": (0.5, 1.5), "strength_scale": (0.5, 1.0), "effort_scale": (0.05, 0.1)},
    )
    env = VelocityEnv(cfg)
    try:
        p, explicit = env.physics_params, env.explicit_actuators
        hips = [0, 3, 6, 9]
        legs = [i for i in range(12) if i not in hips]
        for name in ("kp_scale", "strength_scale", "effort_scale"):
            torch.testing.assert_close(explicit.scale(name)[:, legs], p[name][:, legs], rtol=0, atol=0)
            assert (explicit.scale(name)[:, hips] == 1).all()  # the servos' draws went to their model arrays
        gain = torch.as_tensor(
            np.stack([m.actuator_gainprm[env.robot.actuator_ids[hips], 0] for m in env.backend._models])
        )
        torch.testing.assert_close(
            gain.float(), KP * (p["kp_scale"] * p["strength_scale"])[:, hips], rtol=1e-5, atol=1e-5
        )
        # The effort scale caps every explicit joint at a tenth of its limit or less, whatever the PD asks.
        for _ in range(5):
            env.step(5 * torch.randn(6, 12))
        limits = torch.tensor([23.7, 23.7, 45.43] * 4)
        cap = limits * p["strength_scale"] * p["effort_scale"]
        torque = env.backend.joint_torques
        assert (torque[:, legs].abs() <= cap[:, legs] + 1e-4).all()
        assert (torque[:, legs].abs() >= cap[:, legs] - 1e-4).any()
    finally:
        env.close()


def test_a_reset_clears_a_networks_history(tmp_path):
    network = ActuatorCfg(model="network", network_path=pd_network(str(tmp_path / "n.pt"), steps=3))
    cfg = go2_cfg(num_envs=3, legs=network)
    env = VelocityEnv(cfg)
    try:
        for _ in range(3):
            env.step(torch.randn(3, 12))
        group = env.explicit_actuators.groups[0]
        assert group.error_history.abs().sum(dim=(1, 2)).min() > 0
        env._reset_envs(torch.tensor([False, True, False]))
        assert group.error_history[1].abs().sum() == 0 and group.vel_history[1].abs().sum() == 0
        assert group.error_history[0].abs().sum() > 0
    finally:
        env.close()


def test_an_actuator_group_from_the_command_line():
    cfg = build_env_cfg(
        "RoboLab-Velocity-Flat-Go2-v0",
        {"robot": {"actuators": {"legs": {"model": "dc_motor", "velocity_limit": 21.0, "joints": [".*_calf_joint"]}}}},
    )
    assert cfg.robot.actuators["legs"] == ActuatorCfg(model="dc_motor", velocity_limit=21.0, joints=[".*_calf_joint"])


def test_a_saved_run_keeps_its_own_actuators():
    """A run saved with servos everywhere (or before explicit actuators existed) plays back with servos, even when the
    task has since given its robot actuator models."""
    saved = build_env_cfg("RoboLab-Velocity-Flat-Go2-v0", {"robot": {"actuators": {"legs": {"model": "ideal_pd"}}}})
    as_saved = OmegaConf.to_container(OmegaConf.structured(saved))
    assert isinstance(as_saved, dict)
    del as_saved["robot"]["actuators"]  # a run saved before the field existed
    replayed = build_env_cfg("RoboLab-Velocity-Flat-Go2-v0", {}, saved=as_saved)
    assert replayed.robot.actuators == {}


@pytest.mark.parametrize(
    ("actuators", "message"),
    [
        ({"legs": ActuatorCfg(model="servo")}, "env.robot.actuators.legs.model='servo': allowed: ideal_pd"),
        ({"legs": ActuatorCfg(velocity_limit=0.0)}, "env.robot.actuators.legs.velocity_limit=0.0: must be > 0"),
        ({"legs": ActuatorCfg(saturation_effort=-1.0)}, "saturation_effort=-1.0: must be > 0"),
        ({"legs": ActuatorCfg(model="network")}, "env.robot.actuators.legs.network_path: a network actuator needs"),
        ({"legs": ActuatorCfg(input_idx=[-1])}, "input_idx=[-1]: one or more steps back"),
        ({"legs": ActuatorCfg(input_order="vel")}, "input_order='vel': allowed: pos_vel, vel_pos"),
        ({"legs": ActuatorCfg(joints=["knee"])}, "env.robot.actuators.legs.joints: 'knee' matches none of"),
        (
            {"a": ActuatorCfg(joints=[".*calf.*"]), "b": ActuatorCfg(joints=["FL_.*"])},
            "env.robot.actuators.b.joints: joint 'FL_calf_joint' is already driven by env.robot.actuators.a",
        ),
        ({"legs": ActuatorCfg(model="network", network_path="/nonexistent.pt")}, "'/nonexistent.pt': no such file"),
    ],
)
def test_bad_actuator_settings_are_one_line_errors(actuators, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")) as err:
        VelocityEnv(go2_cfg(**actuators))
    assert "\n" not in str(err.value)


def test_a_network_of_the_wrong_shape_or_no_network_file_is_refused(tmp_path):
    wide = str(tmp_path / "wide.pt")
    torch.jit.save(torch.jit.script(torch.nn.Linear(6, 3)), wide)
    with pytest.raises(ValueError, match=r"maps \(12, 6\) inputs to \(12, 3\); an actuator network gives one torque"):
        VelocityEnv(go2_cfg(legs=ActuatorCfg(model="network", network_path=wide)))
    junk = tmp_path / "junk.pt"
    junk.write_text("not a network")
    with pytest.raises(ValueError, match="not a TorchScript file"):
        VelocityEnv(go2_cfg(legs=ActuatorCfg(model="network", network_path=str(junk))))


def test_a_network_that_cannot_take_the_inputs_is_refused(tmp_path):
    narrow = str(tmp_path / "narrow.pt")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 1)), narrow)  # one step of history; input_idx asks for three
    with pytest.raises(ValueError, match=r"does not take \(12, 6\) inputs \(2 x 3 steps of input_idx per joint\)"):
        VelocityEnv(go2_cfg(legs=ActuatorCfg(model="network", network_path=narrow)))


def test_only_a_joint_actuator_can_take_torques():
    model = mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody><body><joint name="j" type="hinge"/><geom size="0.1"/><site name="s"/></body>
        </worldbody><actuator><motor name="on_site" site="s" gear="0 0 0 0 0 1"/></actuator></mujoco>"""
    )
    with pytest.raises(ValueError, match="actuator 'on_site': an explicit actuator model drives a joint directly"):
        drive_by_torque(model, np.array([0]))


def test_gains_cannot_be_drawn_for_a_network(tmp_path):
    cfg = go2_cfg(legs=ActuatorCfg(model="network", network_path=pd_network(str(tmp_path / "n.pt")), input_idx=[0]))
    cfg.events["actuators"] = EventTermCfg(func="randomize_actuators", mode="startup", params={"kp_scale": (0.8, 1.2)})
    with pytest.raises(ValueError, match="kp_scale cannot scale the network-driven joints"):
        VelocityEnv(cfg)
    cfg.events["actuators"].params = {"strength_scale": (0.8, 1.0)}  # a network's torque can still be scaled
    VelocityEnv(cfg).close()
