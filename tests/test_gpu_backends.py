"""The GPU backend, MuJoCo Warp (here on warp's CPU device), against MuJoCo C.

MuJoCo Warp is a float32 implementation of MuJoCo; MuJoCo C runs in float64. From the same state, controls, friction
and base mass:

- With the Newton solve run to convergence (100 iterations, tolerance 1e-10) the two follow the same trajectory
  through 10 control steps (40 physics steps) in which every foot of every env lands and stays loaded. Tolerances:
  qpos 1e-5, qvel 1e-3, contact forces 0.05 N, torques 1e-3 N m, foot positions 1e-5 m. Measured (max over envs
  and steps): 4.8e-7, 4.9e-5, 1.1e-3 N, 1.6e-5, 1.9e-7.
- With the task's own solver (4 Newton iterations) each implementation stops at a different inexact point once
  three or four feet are loaded (their line searches differ), so that comparison runs to first contact only,
  and the MDP-level one (observations and rewards through the env) covers its first 3 steps.

A diverged env (NaN state) is flagged, reset alone and counted, and the envs beside it are untouched.

CI runs these on the CPU. ``ROBOLAB_TEST_DEVICE=cuda`` runs the same tests with the backend on a GPU
(docs/benchmarks/h200_warp.sh does, on an H200), against MuJoCo C's physics on the CPU as always.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys

import pytest
import torch

from conftest import ROOT, TINY, clean_env, go2_robot, go2_servo_robot, run, train_cmd
from robolab.assets import load_robot
from robolab.envs import VelocityEnv
from robolab.envs.backends import make_backend, resolve_name
from robolab.envs.velocity_env_cfg import BackendCfg
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

WARMUP = str(ROOT / "scripts" / "warmup.py")

N = 8
DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")  # where the backend under test runs
TOLERANCES = {"qpos": 1e-5, "qvel": 1e-3, "force": 0.05, "torque": 1e-3, "foot_pos": 1e-5}
pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")


def make_pair(converged: bool):
    """(MuJoCo C, MuJoCo Warp) backends of N envs from one drop pose, with per-variant friction and base mass."""
    from robolab.envs.backends.mujoco_backend import MujocoBackend
    from robolab.envs.backends.warp_backend import WarpBackend

    robot_cfg = go2_servo_robot()
    pair = []
    for backend in ("mujoco", "warp"):
        if converged:  # the same model, its Newton solve run to convergence
            robot = load_robot(robot_cfg, timestep=0.005)
            robot.model.opt.iterations, robot.model.opt.ls_iterations, robot.model.opt.tolerance = 100, 50, 1e-10
            pair.append(MujocoBackend(robot, N, 1, "cpu") if backend == "mujoco" else WarpBackend(robot, N, DEVICE))
        else:
            device = "cpu" if backend == "mujoco" else DEVICE
            pair.append(make_backend(BackendCfg(name=backend, num_threads=1), robot_cfg, 0.005, N, device))
    g = torch.Generator().manual_seed(0)
    qpos = torch.tensor(pair[0].robot.model.key_qpos[0], dtype=torch.float32).repeat(N, 1)
    qpos[:, 7:] += 0.1 * torch.randn(N, 12, generator=g)
    qpos[:, 2] += 0.02  # dropped from 2 cm: feet land during the test
    for b in pair:
        b.reset(torch.ones(N, dtype=torch.bool), qpos, torch.zeros(N, b.robot.model.nv))
        b.set_friction(torch.linspace(0.4, 1.2, b.num_variants))
        b.set_added_base_mass(torch.linspace(-1.0, 2.0, b.num_variants))
    return pair, g


def assert_close(ours: torch.Tensor, theirs: torch.Tensor, atol: float) -> None:
    torch.testing.assert_close(ours.cpu(), theirs.cpu(), atol=atol, rtol=0)


def assert_same_readings(ours, theirs, atol: dict[str, float]) -> None:
    assert_close(ours.qpos, theirs.qpos, atol["qpos"])
    assert_close(ours.qvel, theirs.qvel, atol["qvel"])
    for group in ("foot", "undesired", "termination"):
        assert_close(ours.contact_forces(group), theirs.contact_forces(group), atol["force"])
    assert_close(ours.joint_torques, theirs.joint_torques, atol["torque"])
    assert_close(ours.foot_positions, theirs.foot_positions, atol["foot_pos"])


def test_converged_solver_gives_the_same_trajectory_as_mujoco_c():
    (c, ours), g = make_pair(converged=True)
    default = torch.tensor(go2_robot().default_joint_pos)
    loaded = torch.zeros(N, 4, dtype=torch.bool)
    for _ in range(10):
        targets = default + 0.05 * torch.randn(N, 12, generator=g)
        c.step(targets, 4)
        ours.step(targets, 4)
        assert_same_readings(ours, c, TOLERANCES)
        loaded = c.contact_forces("foot") > 1.0
    assert loaded.all(), "every foot of every env should be loaded by the end (else contacts go untested)"
    assert not ours.non_finite.any()


def test_default_solver_gives_the_same_trajectory_until_the_feet_land():
    (c, ours), g = make_pair(converged=False)
    default = torch.tensor(go2_robot().default_joint_pos)
    for _ in range(4):  # the 4th control step brings the first feet down
        targets = default + 0.05 * torch.randn(N, 12, generator=g)
        c.step(targets, 4)
        ours.step(targets, 4)
        assert_same_readings(ours, c, TOLERANCES)
    assert (c.contact_forces("foot") > 1.0).any(), "some foot should have landed (else contacts go untested)"


def make_env(backend: str, num_envs: int = N, **kw) -> VelocityEnv:
    # MuJoCo C's env on the GPU too (its physics stays on the CPU): the MDP draws its random numbers on its device,
    # and a CUDA generator draws other numbers than a CPU one from the same seed.
    cfg = Go2FlatEnvCfg(num_envs=num_envs, seed=5, device=DEVICE, **kw)
    cfg.backend.name, cfg.backend.num_threads = backend, 1
    return VelocityEnv(cfg)


def test_the_mdp_sees_the_same_observations_and_rewards_as_on_mujoco_c():
    # Torque limits out of reach: the default solver's inexact stops differ most when motors saturate. Servos: with
    # the Go2's DC motors MuJoCo C steps one physics step per rollout call, each starting its solver cold, and the
    # first touchdown parts the backends (tests/test_actuators.py compares the DC motors in the air).
    unsaturated = go2_servo_robot(torque_limits=[1e4] * 12)
    envs = [make_env("mujoco", robot=unsaturated), make_env("warp", robot=unsaturated)]
    g = torch.Generator().manual_seed(1)
    assert_close(envs[1].get_observations()["critic"], envs[0].get_observations()["critic"], 1e-3)
    for _ in range(3):
        actions = 0.1 * torch.randn(N, 12, generator=g)
        (o0, r0, d0, _), (o1, r1, d1, _) = (env.step(actions) for env in envs)
        for group in ("policy", "critic"):
            assert_close(o1[group], o0[group], 1e-3)
        assert_close(r1, r0, 1e-3)
        assert torch.equal(d0.cpu(), d1.cpu())


def test_a_non_finite_env_is_reset_alone_and_counted():
    env = make_env("warp")
    env.step(torch.zeros(N, 12))
    lengths_before = env.episode_length_buf.clone()
    env.backend.corrupt(torch.tensor([1, 6]))
    obs, rew, done, extras = env.step(torch.zeros(N, 12))
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(obs["critic"]).all() and torch.isfinite(rew).all()
    assert done[1] == 1 and done[6] == 1 and rew[1] == 0 and rew[6] == 0
    others = torch.tensor([i for i in range(N) if i not in (1, 6)], device=env.device)
    assert torch.all(env.episode_length_buf[others] == lengths_before[others] + 1)
    assert extras["log"]["Episode_Termination/non_finite"].item() == 2 and env.non_finite_count == 2
    assert not env.backend.non_finite.any()  # the reset cleared the flag on the device
    assert torch.isfinite(env.backend.contact_forces("foot")).all() and torch.isfinite(env.backend.joint_torques).all()
    for _ in range(3):  # the reset envs step on; the NaNs reached no other env
        obs, *_ = env.step(torch.zeros(N, 12))
    assert torch.isfinite(obs["critic"]).all() and env.non_finite_count == 2


@pytest.mark.slow
def test_train_cli_trains_on_warp(tmp_path):
    res = run(
        train_cmd(
            *TINY,
            "--max_iterations",
            "2",
            "--log_root",
            str(tmp_path),
            "--run_name",
            "gpu",
            "env.backend=warp",
        ),
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (run_dir,) = (tmp_path / "go2_flat").glob("*_gpu")
    assert (run_dir / "model_1.pt").exists()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["total_env_steps"] == 2 * 8 * 16
    assert "name: warp" in (run_dir / "params" / "env.yaml").read_text()
    # The start-up line says whether MuJoCo Warp's kernel cache was warm (its compile is a cold start's first minute).
    assert re.search(r"\[robolab\] MuJoCo Warp kernel cache \S+: (warm|cold) \(", res.stdout), res.stdout[-2000:]


@pytest.mark.slow
def test_warmup_fills_an_empty_kernel_cache_and_a_second_run_finds_it_warm(tmp_path):
    """``scripts/warmup.py`` where ``WARP_CACHE_PATH`` points: cold the first time (the kernels compiled into it), warm
    the second (nothing compiled), and its JSON says so."""
    env = clean_env(WARP_CACHE_PATH=str(tmp_path / "cache"))
    reports = []
    for _ in range(2):
        res = run([sys.executable, WARMUP, "--device", "cpu", "--num_envs", "4"], env=env, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        reports.append(json.loads(res.stdout.strip().splitlines()[-1]))
    cold, warm = reports
    assert cold["directory"].startswith(str(tmp_path / "cache")) and cold["files_before"] == 0
    assert cold["compiled"] == cold["files_after"] > 0
    assert warm["compiled"] == 0 and warm["files_before"] == warm["files_after"] == cold["files_after"]
    assert warm["seconds"] < cold["seconds"]


def test_auto_picks_warp_on_a_gpu_and_mujoco_c_on_the_cpu(monkeypatch):
    assert resolve_name("auto", "cpu") == "mujoco"
    assert resolve_name("auto", "cuda:1") == "warp"
    assert resolve_name("mujoco", "cuda") == "mujoco" and resolve_name("warp", "cpu") == "warp"
    # Without the warp extra a GPU run still trains, on MuJoCo C, and says why and what to install.
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "mujoco_warp" else find_spec(n, *a))
    with pytest.warns(UserWarning, match=r"pip install 'robolab\[warp\]'"):
        assert resolve_name("auto", "cuda") == "mujoco"
    assert make_env("mujoco").cfg.backend.name == "mujoco"


def test_warp_without_its_extra_is_a_one_line_error_naming_the_install(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)  # as if the warp extra were not installed
    monkeypatch.delitem(sys.modules, "robolab.envs.backends.warp_backend", raising=False)
    from robolab.cli.train import main

    log_root = tmp_path / "logs"
    assert main(["--num_envs", "2", "--log_root", str(log_root), "env.backend=warp"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "env.backend.name='warp' needs MuJoCo Warp" in lines[0], lines
    assert "pip install 'robolab[warp]'" in lines[0]
