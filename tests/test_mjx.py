"""The mjx backend on JAX's CPU device: parity with the mujoco backend, NaN containment, training end to end.

Tolerances (float32 MJX against float64 MuJoCo C, from the same state and controls, 5 control steps = 20
physics steps): generalised positions 1e-4, velocities 2e-3, contact forces 0.05 N, torques 0.01 N m, foot
positions 1e-4 m; policy observations 1e-3. Measured: 6e-7, 1.5e-5, 3e-4 N, 4e-6, 2e-7. The controls stay
inside the torque limits: when an actuator saturates, MuJoCo C drops its velocity derivative from the
implicit integrator and MJX does not, so the two part ways after a few steps (0.02 in qpos, 1.5 in qvel,
with or without JAX's x64 mode). With three or four feet loaded, the default 4-iteration Newton solve is
inexact and the two implementations' line searches differ by up to 2 N and 0.04 rad/s per step (seen in
one of 8 envs at the 4th MDP step below), so the MDP comparison covers the first 3 steps.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch

from conftest import TINY, clean_env, run, train_cmd

pytest.importorskip("mujoco.mjx", reason="the mjx extra (mujoco-mjx, jax) is part of the test extra")

from conftest import go2_robot
from robolab.envs import VelocityEnv
from robolab.envs.backends import make_backend
from robolab.envs.velocity_env_cfg import BackendCfg
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

N = 8


def backends():
    c = make_backend(BackendCfg(name="mujoco", num_threads=1), go2_robot(), 0.005, N, "cpu")
    j = make_backend(BackendCfg(name="mjx"), go2_robot(), 0.005, N, "cpu")
    return c, j


def test_mjx_and_mujoco_backends_follow_the_same_trajectory():
    c, j = backends()
    g = torch.Generator().manual_seed(0)
    key = torch.tensor(c.robot.model.key_qpos[0], dtype=torch.float32)
    qpos = key.repeat(N, 1)
    qpos[:, 7:] += 0.1 * torch.randn(N, 12, generator=g)
    qpos[:, 2] += 0.02  # drop onto the ground: feet make and break contact during the test
    default = torch.tensor(go2_robot().default_joint_pos)
    for b in (c, j):
        b.reset(torch.arange(N), qpos, torch.zeros(N, c.robot.model.nv))
        b.set_friction(torch.linspace(0.4, 1.2, b.num_variants))
        b.set_added_base_mass(torch.linspace(-1.0, 2.0, b.num_variants))
    touched = torch.zeros(N, 4, dtype=torch.bool)
    for _ in range(5):
        targets = default + 0.05 * torch.randn(N, 12, generator=g)
        c.step(targets, 4)
        j.step(targets, 4)
        torch.testing.assert_close(j.qpos, c.qpos, atol=1e-4, rtol=0)
        torch.testing.assert_close(j.qvel, c.qvel, atol=2e-3, rtol=0)
        for group in ("foot", "undesired", "termination"):
            torch.testing.assert_close(j.contact_forces(group), c.contact_forces(group), atol=0.05, rtol=1e-3)
        torch.testing.assert_close(j.joint_torques, c.joint_torques, atol=1e-2, rtol=0)
        torch.testing.assert_close(j.foot_positions, c.foot_positions, atol=1e-4, rtol=0)
        touched |= c.contact_forces("foot") > 1.0
    assert touched.any(dim=0).all(), "each foot should touch the ground in some env (else contacts go untested)"
    assert not j.non_finite.any()


def make_env(backend: str, num_envs: int = N, **kw) -> VelocityEnv:
    cfg = Go2FlatEnvCfg(num_envs=num_envs, seed=5, **kw)
    cfg.backend.name, cfg.backend.num_threads = backend, 1
    return VelocityEnv(cfg)


def test_the_mdp_sees_the_same_observations_and_rewards_on_both_backends():
    # Reset poses are random, so a PD target far away saturates a motor (where the backends differ, see top).
    unsaturated = go2_robot(torque_limits=[1e4] * 12)
    envs = [make_env("mujoco", robot=unsaturated), make_env("mjx", robot=unsaturated)]
    g = torch.Generator().manual_seed(1)
    torch.testing.assert_close(
        envs[1].get_observations()["critic"], envs[0].get_observations()["critic"], atol=1e-3, rtol=0
    )
    for _ in range(3):
        actions = 0.1 * torch.randn(N, 12, generator=g)
        (o0, r0, d0, _), (o1, r1, d1, _) = (env.step(actions) for env in envs)
        for group in ("policy", "critic"):
            torch.testing.assert_close(o1[group], o0[group], atol=1e-3, rtol=0)
        torch.testing.assert_close(r1, r0, atol=1e-3, rtol=0)
        assert torch.equal(d0, d1)


def test_non_finite_mjx_state_resets_only_that_env_and_is_counted():
    env = make_env("mjx")
    env.step(torch.zeros(N, 12))
    lengths_before = env.episode_length_buf.clone()
    env.backend.corrupt(torch.tensor([1, 6]))
    obs, rew, done, extras = env.step(torch.zeros(N, 12))
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(obs["critic"]).all() and torch.isfinite(rew).all()
    assert done[1] == 1 and done[6] == 1 and rew[1] == 0 and rew[6] == 0
    others = [i for i in range(N) if i not in (1, 6)]
    assert torch.all(env.episode_length_buf[others] == lengths_before[others] + 1)
    assert extras["log"]["Episode_Termination/non_finite"].item() == 2 and env.non_finite_count == 2
    assert not env.backend.non_finite.any()  # the reset cleared the flag on the device
    assert torch.isfinite(env.backend.contact_forces("foot")).all() and torch.isfinite(env.backend.joint_torques).all()
    obs, *_ = env.step(torch.zeros(N, 12))
    assert torch.isfinite(obs["critic"]).all() and env.non_finite_count == 2


def test_mjx_backend_hands_torch_views_of_jax_arrays():
    env = make_env("mjx", num_envs=4)
    qpos = env.backend.qpos
    assert qpos.dtype == torch.float32 and qpos.shape == (4, env.robot.model.nq)
    # DLPack shares memory: the torch tensor points at the JAX buffer.
    import jax

    assert qpos.data_ptr() == env.backend._data.qpos.unsafe_buffer_pointer()
    assert isinstance(env.backend._data.qpos, jax.Array)


def test_more_envs_than_one_cpu_chunk_step_without_deadlock():
    # 256 envs hung JAX's batched CPU Cholesky on 2 cores before the backend chunked the batch.
    c, j = (make_backend(BackendCfg(name=n, num_threads=1), go2_robot(), 0.005, 256, "cpu") for n in ("mujoco", "mjx"))
    targets = torch.tensor(go2_robot().default_joint_pos).expand(256, -1)
    key = torch.tensor(c.robot.model.key_qpos[0], dtype=torch.float32).repeat(256, 1)
    for b in (c, j):
        b.reset(torch.arange(256), key, torch.zeros(256, c.robot.model.nv))
    for _ in range(3):
        c.step(targets, 4)
        j.step(targets, 4)
    torch.testing.assert_close(j.qpos, c.qpos, atol=1e-4, rtol=0)


def test_unknown_backend_is_a_one_line_error():
    with pytest.raises(
        ValueError, match=r"env.backend.name='warp' is not a known backend \(allowed: 'mujoco', 'mjx'\)"
    ):
        make_env("warp")


@pytest.mark.slow
def test_train_cli_trains_on_the_mjx_backend(tmp_path):
    res = run(
        train_cmd(*TINY, "--max_iterations", "2", "--log_root", str(tmp_path), "--run_name", "mjx", "env.backend=mjx"),
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (run_dir,) = (tmp_path / "go2_flat").glob("*_mjx")
    assert (run_dir / "model_1.pt").exists()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["total_env_steps"] == 2 * 8 * 16
    assert "name: mjx" in (run_dir / "params" / "env.yaml").read_text()


@pytest.mark.slow
def test_importing_the_backend_changes_no_global_setting():
    code = (
        "import os, jax; import robolab.envs.backends.mjx_backend as m; "
        "print(os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'), jax.config.jax_compilation_cache_dir); "
        "m.configure_jax(); print(os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'), "
        "jax.config.jax_compilation_cache_dir.endswith('robolab/jax'))"
    )
    env = {
        k: v for k, v in clean_env().items() if k not in ("XLA_PYTHON_CLIENT_PREALLOCATE", "JAX_COMPILATION_CACHE_DIR")
    }
    res = run([sys.executable, "-c", code], env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    # (mujoco.mjx may print a line about its optional warp implementation first)
    assert " ".join(res.stdout.strip().splitlines()[-2:]).split() == ["None", "None", "false", "True"]
