"""Sim2Sim mapping: derived from both envs' interfaces, exact on a permuted-joint variant, one-line errors."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT, TINY, run, train_cmd
from robolab import runs
from robolab.session import env_config, join, open_env, prepare_policy
from robolab.sim2sim import MappedPolicy, PolicyInterface, Sim2SimError, check_compatible, interface_of
from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg

TASK = "RoboLab-Velocity-Flat-Go2-v0"
SIM2SIM = str(ROOT / "scripts" / "sim2sim.py")
# Same commands, state and physics in both envs: no noise, pushes or per-joint reset draws.
EXACT = [
    "env.observations.policy.enable_corruption=false",
    "~env.events.push_robot",
    "env.events.reset_robot.params.joint_pos_scale=[1.0,1.0]",
    "env.num_envs=4",
    "env.backend.num_threads=1",
    "seed=5",
]
ORDER = [9, 3, 0, 6, 10, 4, 1, 7, 11, 5, 2, 8]  # RR, FR, FL, RL hips, then thighs, then calves


def permuted_robot_overrides() -> list[str]:
    robot = go2_robot_cfg()

    def listed(values) -> str:
        return "[" + ",".join(str(values[i]) for i in ORDER) + "]"

    return [
        f"env.robot.joint_names={listed(robot.joint_names)}",
        f"env.robot.default_joint_pos={listed(robot.default_joint_pos)}",
        f"env.robot.torque_limits={listed(robot.torque_limits)}",
    ]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    res = run(train_cmd(*TINY, "--max_iterations", "2", "--log_root", str(logs)))
    assert res.returncode == 0, res.stderr[-3000:]
    return logs


def test_a_permuted_joint_order_gives_the_same_actions_through_the_mapping(trained_run):
    find = lambda agent: runs.select_checkpoint(str(trained_run / agent["experiment_name"]))
    source = prepare_policy(TASK, EXACT, "cpu", find)
    job = join(TASK, EXACT + permuted_robot_overrides(), "cpu", False)
    with source.closer, contextlib.ExitStack() as closer:
        target_env, _ = open_env(TASK, env_config(TASK, job), job, closer)
        policy = source.runner.get_inference_policy(device="cpu")
        source_if, target_if = interface_of(TASK, source.env), interface_of(TASK, target_env)
        assert target_if.joint_names == [source_if.joint_names[i] for i in ORDER]
        mapped = MappedPolicy(policy, source_if, target_if)
        source_obs, target_obs = source.env.get_observations(), target_env.get_observations()
        compared = 0
        with torch.inference_mode():
            for _ in range(40):
                # the mapping rebuilds exactly the observation the policy was trained on
                torch.testing.assert_close(
                    mapped.source_observation(target_obs["policy"]), source_obs["policy"], atol=1e-5, rtol=1e-5
                )
                expected = policy(source_obs)
                got = mapped(target_obs)  # in the target's joint order
                torch.testing.assert_close(got, expected[:, ORDER], atol=1e-5, rtol=1e-5)
                source_obs, _, source_dones, _ = source.env.step(expected)
                target_obs, _, target_dones, _ = target_env.step(got)
                assert torch.equal(source_dones, target_dones)
                mapped.reset(target_dones)
                compared += 1
        assert compared == 40
        # the permutation matters: fed unmapped, the policy acts differently
        assert not torch.allclose(policy(target_obs)[:, ORDER], policy(source_obs)[:, ORDER], atol=1e-3)


def interface(**changes) -> PolicyInterface:
    base = PolicyInterface(
        terms=[("base_ang_vel", 3, 1.0), ("joint_pos", 2, 1.0), ("joint_vel", 2, 0.05), ("actions", 2, 1.0)],
        joint_names=["a", "b"],
        action_scale=torch.tensor([0.25, 0.25]),
        default_joint_pos=torch.tensor([0.1, -0.2]),
        dt=0.02,
    )
    return dataclasses.replace(base, **changes)


def test_scales_and_defaults_are_mapped_by_name():
    source = interface()
    target = interface(
        terms=[("joint_vel", 2, 1.0), ("joint_pos", 2, 1.0), ("base_ang_vel", 3, 0.25), ("actions", 2, 1.0)],
        joint_names=["b", "a"],
        action_scale=torch.tensor([0.5, 0.5]),
        default_joint_pos=torch.tensor([0.0, 0.0]),
    )
    seen = {}

    def policy(obs):
        seen["obs"] = obs["policy"].clone()
        return torch.tensor([[1.0, -1.0]])

    from tensordict import TensorDict

    target_obs = torch.tensor([[10.0, 20.0, 0.5, 0.7, 1.0, 2.0, 3.0, 9.0, 9.0]])  # vel(b,a) pos(b,a) ang*0.25 act
    action = MappedPolicy(policy, source, target)(TensorDict({"policy": target_obs}, batch_size=[1]))
    # ang vel unscaled (/0.25); joint pos re-referenced to the source's defaults; vel scaled by 0.05; own last action
    expected_obs = torch.tensor([[4.0, 8.0, 12.0, 0.7 - 0.1, 0.5 + 0.2, 20.0 * 0.05, 10.0 * 0.05, 0.0, 0.0]])
    torch.testing.assert_close(seen["obs"], expected_obs)
    # source targets: a = 0.1 + 0.25, b = -0.2 - 0.25; target action = target / 0.5 in the target's order (b, a)
    torch.testing.assert_close(action, torch.tensor([[(-0.45) / 0.5, 0.35 / 0.5]]))


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (interface(dt=0.01), "control period: the policy was trained at 0.02 s per step, the target env steps 0.01 s"),
        (
            interface(terms=[("base_ang_vel", 3, 1.0), ("joint_pos", 2, 1.0), ("actions", 2, 1.0)]),
            "observation term 'joint_vel' of the policy is not in the target env's policy group",
        ),
        (interface(joint_names=["a", "c"]), r"joints \['b'\] of the policy are not joints of the target env"),
        (interface(history=3), "observation history: the policy reads 1 frames, the target env gives 3"),
        (
            interface(
                terms=[("base_ang_vel", 4, 1.0), ("joint_pos", 2, 1.0), ("joint_vel", 2, 1.0), ("actions", 2, 1.0)]
            ),
            "observation term 'base_ang_vel': width 3 for the policy, 4 in the target env",
        ),
    ],
)
def test_what_cannot_be_mapped_is_named(target, message):
    with pytest.raises(Sim2SimError, match=message):
        check_compatible(interface(), target)


@pytest.mark.slow
def test_sim2sim_command_reports_both_sides_and_refuses_another_control_rate(trained_run):
    cmd = [
        sys.executable,
        SIM2SIM,
        "--log_root",
        str(trained_run),
        "--target",
        TASK,
        "--num_envs",
        "4",
        "--steps",
        "30",
    ]
    out = trained_run / "s2s.json"
    perturbed = ["--latency_ms", "20", "--kp_scale", "0.9"]
    res = run([*cmd, "--output", str(out), "--video", "--video_length", "5", *perturbed, *permuted_robot_overrides()])
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["target"]["perturbations"] == {"latency_ms": 20.0, "kp_scale": 0.9}
    run_dir = Path(result["checkpoint"]).parent
    for side in ("source", "target"):  # env 0 recorded in both simulators
        assert list((run_dir / "sim2sim" / "videos" / f"{side}_{TASK}").glob("*.mp4")), side
    assert result["mapping"]["target"]["joint_names"] == [result["mapping"]["source"]["joint_names"][i] for i in ORDER]
    for side in ("source", "target"):
        assert result[side]["steps"] == 30 and set(result[side]["gait_scores"]) == {"trot", "pace"}
    assert "tracking error (m/s)" in res.stdout and "target: RoboLab-Velocity-Flat-Go2-v0" in res.stdout
    res = run([*cmd, "env.decimation=2"])
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("error: control period: the policy was trained at 0.02 s")


@pytest.mark.slow
def test_a_gpu_checkpoint_plays_on_a_cpu(trained_run, tmp_path):
    """A GPU run's env generator state (a CUDA generator's 16 bytes) cannot be set on a CPU generator: it re-seeds."""
    original = runs.select_checkpoint(str(trained_run / "go2_flat"))
    saved = torch.load(original, weights_only=True)
    saved["rng_state"]["env"] = torch.zeros(16, dtype=torch.uint8)
    saved["rng_state"]["env_device"] = "cuda"
    run_dir = tmp_path / "gpu_run"
    run_dir.mkdir()
    (run_dir / "params").mkdir()
    for name in ("env.yaml", "agent.yaml"):
        (run_dir / "params" / name).write_text((Path(original).parent / "params" / name).read_text())
    torch.save(saved, run_dir / "model_1.pt")
    play = [sys.executable, str(ROOT / "scripts" / "play.py"), "--checkpoint", str(run_dir / "model_1.pt")]
    res = run([*play, "--num_envs", "2", "--steps", "3", "--no_export", "--device", "cpu"])
    assert res.returncode == 0, res.stderr[-2000:]


@pytest.mark.parametrize(
    "target, message",
    [
        ("NoSuch-Task-v0", "unknown task 'NoSuch-Task-v0'"),
        ("RoboLab-Velocity-Flat-Go2-v0 env.decimation=abc", "env.decimation"),
    ],
)
def test_sim2sim_checks_its_target_before_it_runs_the_source(tmp_path, target, message):
    # No run exists under this log root: had the source run first, that would be the error reported.
    task, *overrides = target.split()
    res = run([sys.executable, SIM2SIM, "--log_root", str(tmp_path / "none"), "--target", task, *overrides])
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert message in res.stderr, res.stderr


def test_perturbation_flags_become_the_target_envs_physics():
    """``--latency_ms 40 --kp_scale 0.75 --strength_scale 0.8 --friction 0.4 --added_mass 3 --obs_noise_scale 2``:
    every env of the target gets exactly that (the robustness table's conditions)."""
    from robolab import evaluation
    from robolab.sim2sim import perturbation_overrides
    from robolab.tasks import kind_of

    base = evaluation.eval_overrides(TASK, 4, 0)
    cfg = env_config(TASK, join(TASK, base, "cpu", False))
    values = {
        "latency_ms": 40,
        "kp_scale": 0.75,
        "strength_scale": 0.8,
        "friction": 0.4,
        "added_mass": 3.0,
        "obs_noise_scale": 2.0,
    }
    overrides = perturbation_overrides(values, cfg, kind_of(TASK).name)
    base = [o for o in base if not o.startswith("env.observations.policy.enable_corruption")]
    job = join(TASK, base + overrides, "cpu", False)
    with contextlib.ExitStack() as closer:
        env, _ = open_env(TASK, env_config(TASK, job), job, closer)
        p = env.physics_params
        assert (p["action_delay"] == 2).all()  # 40 ms at 50 Hz
        for name, value in (("kp_scale", 0.75), ("strength_scale", 0.8), ("friction", 0.4), ("added_base_mass", 3.0)):
            torch.testing.assert_close(p[name], torch.full_like(p[name], value), atol=1e-6, rtol=0, msg=name)
        policy = env.cfg.observations["policy"]
        assert policy.enable_corruption and policy.terms["joint_vel"].noise == pytest.approx(
            2 * cfg.observations["policy"].terms["joint_vel"].noise, abs=1e-9
        )
    with pytest.raises(Sim2SimError, match=r"--latency_ms=30: must be a whole number of control periods \(20 ms\)"):
        perturbation_overrides({"latency_ms": 30}, cfg, "embedded")
    with pytest.raises(Sim2SimError, match="--kp_scale=-1: must be >= 0"):
        perturbation_overrides({"kp_scale": -1.0}, cfg, "embedded")
    with pytest.raises(Sim2SimError, match="--kp_scale: perturbations apply to an embedded target"):
        perturbation_overrides({"kp_scale": 0.75}, cfg, "isaaclab")
