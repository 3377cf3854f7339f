"""The velocity env on the mujoco backend: determinism, resets, NaN containment, rsl_rl compatibility."""

from __future__ import annotations

import pytest
import torch
from rsl_rl.env import VecEnv

from robolab.envs import VelocityEnv
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg


def make_env(num_envs=8, seed=0, **kw) -> VelocityEnv:
    cfg = Go2FlatEnvCfg(num_envs=num_envs, seed=seed, **kw)
    cfg.backend.num_threads = 1
    return VelocityEnv(cfg)


def rollout(env: VelocityEnv, steps: int, action_seed: int = 0):
    g = torch.Generator().manual_seed(action_seed)
    out = []
    for _ in range(steps):
        obs, rew, done, _ = env.step(torch.randn(env.num_envs, env.num_actions, generator=g) * 0.5)
        out.append((obs["policy"].clone(), obs["critic"].clone(), rew.clone(), done.clone()))
    return out


def test_env_is_an_rsl_rl_vecenv_with_policy_and_critic_groups():
    env = make_env()
    assert isinstance(env, VecEnv)
    obs = env.get_observations()
    assert obs["policy"].shape == (8, 48)
    assert obs["critic"].shape == (8, 54)  # + friction, added mass, 4 foot contacts
    assert env.max_episode_length == 1000  # 20 s at 50 Hz
    assert env.step_dt == pytest.approx(0.02, rel=1e-6)


def test_same_seed_same_trajectory_different_seed_differs():
    a = rollout(make_env(seed=3), 20)
    b = rollout(make_env(seed=3), 20)
    c = rollout(make_env(seed=4), 20)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert torch.equal(u, v)
    assert not torch.equal(a[-1][1], c[-1][1])


def test_thread_count_does_not_change_results():
    cfg1 = Go2FlatEnvCfg(num_envs=8, seed=1)
    cfg1.backend.num_threads = 1
    cfg2 = Go2FlatEnvCfg(num_envs=8, seed=1)
    cfg2.backend.num_threads = 2
    a, b = rollout(VelocityEnv(cfg1), 10), rollout(VelocityEnv(cfg2), 10)
    assert torch.equal(a[-1][1], b[-1][1])


def test_rewards_are_finite_and_per_term_sums_are_logged_at_episode_end():
    env = make_env(episode_length_s=0.2)  # 10 control steps
    logs = []
    for _ in range(10):
        _, rew, done, extras = env.step(torch.zeros(env.num_envs, env.num_actions))
        assert torch.isfinite(rew).all()
        logs.append(extras)
    assert done.all() and extras["time_outs"].all()  # every env timed out at step 10
    for term in ("track_lin_vel_xy", "feet_air_time", "flat_orientation", "undesired_contacts"):
        assert f"Episode_Reward/{term}" in extras["log"]
    assert extras["log"]["Metrics/fall_rate"].item() == 0.0


def test_logged_reward_terms_add_up_to_the_rewards_the_env_returned():
    env = make_env(episode_length_s=0.2)  # every env times out at step 10
    total = torch.zeros(env.num_envs)
    for _ in range(10):
        _, rew, done, extras = env.step(torch.randn(env.num_envs, env.num_actions) * 0.3)
        total += rew
    assert done.all()
    logged = sum(extras["log"][f"Episode_Reward/{t.name}"] for t in env.reward_terms) * env.cfg.episode_length_s
    torch.testing.assert_close(logged, total.mean(), rtol=1e-5, atol=1e-6)


def test_policy_noise_is_uniform_within_each_terms_width_and_spares_commands_and_actions():
    env = make_env(num_envs=64)
    obs, *_ = env.step(torch.randn(env.num_envs, env.num_actions) * 0.3)
    noise = obs["policy"] - obs["critic"][:, :48]  # the critic holds the same terms without noise
    nz, j = {name: t.noise for name, t in env.cfg.observations["policy"].terms.items()}, env.num_actions
    widths = (
        [nz["base_lin_vel"]] * 3
        + [nz["base_ang_vel"]] * 3
        + [nz["projected_gravity"]] * 3
        + [0.0] * 3
        + [nz["joint_pos"]] * j
        + [nz["joint_vel"]] * j
        + [0.0] * j
    )
    assert nz["velocity_commands"] == nz["actions"] == 0.0 and min(w for w in widths if w) > 0
    width = torch.tensor(widths)
    assert torch.all(noise.abs() <= width + 1e-6)
    assert torch.all(noise[:, width == 0] == 0)  # commands and last actions are exact
    assert torch.all(noise[:, width > 0].abs().amax(dim=0) > 0.5 * width[width > 0])  # and the rest is noisy


def test_reset_clears_episode_state_and_resamples():
    env = make_env(episode_length_s=0.1)  # 5 steps
    for _ in range(4):
        env.step(torch.ones(env.num_envs, env.num_actions) * 0.3)
    assert torch.all(env.episode_length_buf == 4)
    assert torch.all(env.last_actions != 0)
    env.step(torch.ones(env.num_envs, env.num_actions) * 0.3)
    assert torch.all(env.episode_length_buf == 0)
    assert torch.all(env.last_actions == 0)
    assert torch.all(env.episode_steps == 0)
    height = env.state.base_pos[:, 2]
    torch.testing.assert_close(height, torch.full_like(height, env.cfg.robot.init_base_height))


def test_nan_state_resets_only_that_env_and_never_reaches_outputs():
    env = make_env()
    env.step(torch.zeros(env.num_envs, env.num_actions))
    lengths_before = env.episode_length_buf.clone()
    env.backend.corrupt(torch.tensor([2, 5]))
    obs, rew, done, extras = env.step(torch.zeros(env.num_envs, env.num_actions))
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(obs["critic"]).all()
    assert torch.isfinite(rew).all()
    assert rew[2] == 0 and rew[5] == 0
    assert done[2] == 1 and done[5] == 1 and not extras["time_outs"][2]
    others = [i for i in range(env.num_envs) if i not in (2, 5)]
    assert torch.all(env.episode_length_buf[others] == lengths_before[others] + 1)
    assert env.non_finite_count == 2
    assert extras["log"]["Episode_Termination/non_finite"].item() == 2
    # and the reset envs step normally afterwards
    obs, rew, _, _ = env.step(torch.zeros(env.num_envs, env.num_actions))
    assert torch.isfinite(obs["critic"]).all() and env.non_finite_count == 2


def test_falling_robot_terminates_without_time_out():
    env = make_env(num_envs=4)
    env.backend.reset(
        torch.ones(4, dtype=torch.bool),
        qpos=torch.cat([torch.tensor([[0, 0, 0.05, 0, 1, 0, 0]]).repeat(4, 1), torch.zeros(4, 12)], dim=1),
        qvel=torch.zeros(4, 18),
    )  # upside down, base on the ground
    _, _, done, extras = env.step(torch.zeros(4, 12))
    assert done.all() and not extras["time_outs"].any()
    assert extras["log"]["Metrics/fall_rate"].item() == 1.0


def test_invalid_num_envs_is_rejected():
    with pytest.raises(ValueError, match="num_envs=0"):
        VelocityEnv(Go2FlatEnvCfg(num_envs=0))


def test_unmodified_rsl_rl_runner_trains_on_the_env(tmp_path):
    from rsl_rl.runners import OnPolicyRunner

    from conftest import tiny_runner_cfg

    env = make_env(num_envs=8)
    cfg = tiny_runner_cfg()
    runner = OnPolicyRunner(env, cfg, log_dir=str(tmp_path), device="cpu")
    before = [p.clone() for p in runner.alg.actor.parameters()]
    runner.learn(2)
    assert any(not torch.equal(a, b) for a, b in zip(before, runner.alg.actor.parameters()))
    assert (tmp_path / "model_1.pt").exists()


@pytest.mark.parametrize("num_variants, expected", [(4, 4), (None, 16)])
def test_randomised_friction_and_mass_reach_the_simulated_models(num_variants, expected):
    cfg = Go2FlatEnvCfg(num_envs=16, seed=0)
    cfg.backend.num_threads, cfg.backend.num_variants = 1, num_variants
    env = VelocityEnv(cfg)
    friction, added_mass = env.physics_params["friction"], env.physics_params["added_base_mass"]
    assert len(set(friction.tolist())) == expected
    base = env.robot.base_body_id
    nominal = env.robot.model.body_mass[base]
    for i, model in enumerate(env.backend._models):
        assert model.geom_friction[0, 0] == pytest.approx(friction[i].item(), rel=1e-6)
        assert model.body_mass[base] == pytest.approx(nominal + added_mass[i].item(), rel=1e-6)
    lo, hi = cfg.events["physics_material"].params["friction_range"]
    assert lo <= friction.min() and friction.max() <= hi
    # privileged critic terms carry the same values
    torch.testing.assert_close(env.get_observations()["critic"][:, 48], friction)


def test_policy_history_stacks_frames_oldest_first_and_restarts_flat_after_reset():
    cfg = Go2FlatEnvCfg(num_envs=4, seed=0, episode_length_s=0.1)  # 5-step episodes
    cfg.observations["policy"].history_length = 3
    cfg.backend.num_threads = 1
    env = VelocityEnv(cfg)
    first = env.get_observations()["policy"]
    assert first.shape == (4, 3 * 48)
    torch.testing.assert_close(first[:, :48], first[:, 96:])  # a new episode: every frame the same
    obs, *_ = env.step(torch.zeros(4, 12))
    torch.testing.assert_close(obs["policy"][:, 48:96], first[:, 96:])  # the old newest frame moved back one slot
    for _ in range(4):
        obs, _, done, _ = env.step(torch.zeros(4, 12))
    assert done.all()
    torch.testing.assert_close(obs["policy"][:, :48], obs["policy"][:, 96:])
    assert env.get_observations()["teacher"].shape == (4, 54)


def test_unknown_backend_is_a_one_line_error_naming_the_choices():
    cfg = Go2FlatEnvCfg(num_envs=2)
    cfg.backend.name = "wrap"
    with pytest.raises(
        ValueError, match=r"env.backend.name='wrap' is not a known backend \(allowed: 'auto', 'mujoco', 'warp'\)"
    ):
        VelocityEnv(cfg)
