"""The MDP as declared terms: the Go2 task reproduces the recorded trajectories of the MDP it replaced, and every
table is checked before any work (one-line errors naming the term)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.record_reference_trajectory import record
from robolab.envs import VelocityEnv
from robolab.envs.terms import ObsTermCfg, RewardTermCfg, TermError
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

REFERENCE = Path(__file__).parent / "data" / "go2_reference_trajectories.npz"


# The reference trajectories were recorded before the Go2 had DC motors: both cases drive it by servos.


def default_case() -> Go2FlatEnvCfg:
    cfg = Go2FlatEnvCfg(num_envs=16, seed=7)
    cfg.robot.actuators = {}
    cfg.backend.num_threads = 1
    return cfg


def busy_case() -> Go2FlatEnvCfg:
    """tests/helpers/record_reference_trajectory.py's busy case, in the declared-terms spelling."""
    cfg = Go2FlatEnvCfg(num_envs=16, seed=11, episode_length_s=0.6)
    cfg.observations["policy"].history_length = 3
    cfg.amp_terms = ["joint_pos", "joint_vel", "base_lin_vel", "base_ang_vel", "foot_pos"]
    command = cfg.commands["base_velocity"].params
    command.update(resampling_time_s=0.3, heading_command=True, heading=(-math.pi / 2, math.pi / 2))
    cfg.events["push_robot"].interval_range_s = (0.1, 0.3)
    cfg.terminations["base_height"].params["min_height"] = 0.26
    cfg.robot.actuators = {}
    cfg.backend.num_threads = 1
    return cfg


@pytest.mark.parametrize("case", [default_case, busy_case], ids=["defaults", "every_event"])
def test_declared_terms_reproduce_the_recorded_trajectory(case):
    reference = np.load(REFERENCE)
    prefix = "default" if case is default_case else "busy"
    ours = record(case())  # the recorder's own rollout, on the declared-terms MDP
    keys = [k.split("/", 1)[1] for k in reference.files if k.startswith(prefix + "/") and "log_" not in k]
    assert {"obs_policy", "obs_critic", "obs_teacher", "rewards", "dones", "time_outs"} <= set(keys)
    for key in keys:
        np.testing.assert_allclose(ours[key], reference[f"{prefix}/{key}"], rtol=1e-5, atol=1e-5, err_msg=key)
    logs = dict(zip(ours["log_names"].tolist(), ours["log_values"]))
    names, values = reference[f"{prefix}/log_names"], reference[f"{prefix}/log_values"]
    for name, recorded in zip(names, values):
        # The episode sums, tracking error, falls, gaits and termination summaries of the replaced MDP, by name.
        np.testing.assert_allclose(logs[str(name)], recorded, rtol=1e-5, atol=1e-6, err_msg=str(name))
    if prefix == "busy":
        assert reference[f"{prefix}/dones"].sum() > 0 and reference[f"{prefix}/time_outs"].sum() > 0


def small_cfg(**kw) -> Go2FlatEnvCfg:
    cfg = Go2FlatEnvCfg(num_envs=4, seed=0, **kw)
    cfg.backend.num_threads = 1
    return cfg


def test_a_zero_weight_reward_is_never_computed_and_not_logged(monkeypatch):
    from robolab.envs.mdp import rewards

    calls = []
    monkeypatch.setattr(rewards, "lin_vel_z_l2", lambda env: calls.append(1) or env.state.base_lin_vel[:, 2])
    cfg = small_cfg()
    cfg.rewards["lin_vel_z"] = RewardTermCfg(func=rewards.lin_vel_z_l2, weight=0.0)
    env = VelocityEnv(cfg)
    env.step(torch.zeros(4, 12))
    assert calls == [] and "lin_vel_z" not in [t.name for t in env.reward_terms]
    cfg.rewards["lin_vel_z"].weight = -2.0
    env = VelocityEnv(cfg)
    env.step(torch.zeros(4, 12))
    assert len(calls) == 2  # the check at construction, then one step


def bonus(env, k: float) -> torch.Tensor:
    """A user's reward term: k per env per step."""
    return torch.full((env.num_envs,), float(k), device=env.device)


def test_a_users_term_from_any_module_is_computed_logged_and_described():
    cfg = small_cfg(episode_length_s=0.1)  # 5 steps, then every env times out
    cfg.rewards["bonus"] = RewardTermCfg(func=f"{__name__}:bonus", weight=2.0, params={"k": 3.0})
    cfg.observations["policy"].terms["height"] = ObsTermCfg(func=f"{__name__}:base_height", scale=10.0)
    env = VelocityEnv(cfg)
    assert env.get_observations()["policy"].shape == (4, 49)
    for _ in range(5):
        _, _, done, extras = env.step(torch.zeros(4, 12))
    assert done.all()
    # 2.0 * 3.0 * dt per step, 5 steps, averaged over the 0.1 s episode: 2 * 3 = 6 per second.
    assert extras["log"]["Episode_Reward/bonus"].item() == pytest.approx(6.0, rel=1e-5)
    policy = env.io_descriptors()["observations"]["policy"]["terms"]
    assert policy[-1] == {
        "name": "height",
        "func": f"{__name__}:base_height",
        "shape": [1],
        "noise_half_width": 0.0,
        "scale": 10.0,
    }


def base_height(env) -> torch.Tensor:
    return env.state.base_pos[:, 2:3]


def wrong_shape(env) -> torch.Tensor:
    return torch.zeros(env.num_envs, 2)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c.rewards.update(foo=RewardTermCfg(func="no_such_term", weight=1.0)),
            r"^env\.rewards\.foo: func='no_such_term': robolab\.envs\.mdp has no function",
        ),
        (
            lambda c: c.rewards.update(foo=RewardTermCfg(func="nowhere.mod:f", weight=1.0)),
            r"^env\.rewards\.foo: func='nowhere\.mod:f': cannot import",
        ),
        (
            lambda c: c.rewards["track_lin_vel_xy"].params.pop("std"),
            r"^env\.rewards\.track_lin_vel_xy: missing parameter 'std'.*params\.std",
        ),
        (lambda c: c.rewards["lin_vel_z"].params.update(k=1), r"^env\.rewards\.lin_vel_z: unknown parameter 'k'"),
        (
            lambda c: c.rewards.update(foo=RewardTermCfg(func=f"{__name__}:wrong_shape", weight=1.0)),
            r"^env\.rewards\.foo: returned shape \(4, 2\) float32; a reward term returns \(4,\) float",
        ),
        (
            lambda c: c.observations["policy"].terms.update(x=ObsTermCfg(func=f"{__name__}:bonus", params={"k": 1})),
            r"^env\.observations\.policy\.terms\.x: returned shape \(4,\)",
        ),
        (
            lambda c: c.events["physics_material"].params.update(friction_range=[-1, 1]),
            r"^env\.events\.physics_material\.params\.friction_range=\[-1, 1\]: the low end must be >= 0",
        ),
        (  # an interval event, whose first call would come seconds into training, is checked at the start
            lambda c: c.events["push_robot"].params.update(velocity_range=-1),
            r"^env\.events\.push_robot\.params\.velocity_range=-1: a half-width, must be >= 0",
        ),
        (
            lambda c: c.events["push_robot"].__setattr__("mode", "often"),
            r"^env\.events\.push_robot\.mode='often': allowed: startup, reset, interval",
        ),
        (
            lambda c: c.commands["base_velocity"].params.update(lin_vel_x=[1, -1]),
            r"^env\.commands\.base_velocity\.params\.lin_vel_x=\[1, -1\]: expected \[low, high\]",
        ),
        (
            lambda c: c.observations["critic"].terms["friction"].params.update(name="gravity"),
            r"^env\.observations\.critic\.terms\.friction\.params\.name='gravity': no event records it",
        ),
        (lambda c: c.__setattr__("velocity_command", "walk"), r"^env\.velocity_command='walk': not a command term"),
    ],
)
def test_a_term_that_cannot_work_is_a_one_line_error_naming_it(change, message):
    cfg = small_cfg()
    change(cfg)
    with pytest.raises(TermError, match=message) as err:
        VelocityEnv(cfg)
    assert "\n" not in str(err.value)


def test_observation_clip_scale_and_term_history_apply_in_isaac_labs_order():
    cfg = small_cfg()
    terms = cfg.observations["policy"].terms
    terms["base_lin_vel"].noise = 0.0
    terms["base_lin_vel"].clip = (-0.01, 0.01)
    terms["base_lin_vel"].scale = 2.0
    terms["projected_gravity"].history_length = 2
    env = VelocityEnv(cfg)
    obs, *_ = env.step(torch.ones(4, 12) * 0.3)
    lin = obs["policy"][:, :3]
    torch.testing.assert_close(lin, 2.0 * env.state.base_lin_vel.clamp(-0.01, 0.01))  # clip, then scale
    assert obs["policy"].shape == (4, 48 + 3)  # gravity's two frames
    assert env.io_descriptors()["observations"]["policy"]["terms"][2]["shape"] == [6]


def test_an_mdp_without_time_out_or_failure_terms_still_steps():
    cfg = small_cfg()
    cfg.terminations = {}
    env = VelocityEnv(cfg)
    _, _, done, extras = env.step(torch.zeros(4, 12))
    assert not done.any() and not extras["time_outs"].any()


def test_a_run_saved_before_the_declared_terms_plays_with_its_own_settings():
    """An old run's params/env.yaml (written by commit eadf0b4) is read through RENAMED: its values land on the
    terms that hold them now, on top of the task's tables."""
    import yaml

    from robolab.config import build_env_cfg

    saved = yaml.safe_load((Path(__file__).parent / "data" / "pre_terms_env.yaml").read_text())
    for key in ("num_envs", "seed", "device", "backend"):  # what play.py takes from the machine, not the run
        saved.pop(key)
    cfg = build_env_cfg("RoboLab-Velocity-Flat-Go2-v0", {"num_envs": 4}, saved)
    assert cfg.observations["policy"].history_length == 2 and not cfg.observations["policy"].enable_corruption
    assert cfg.rewards["feet_air_time"].weight == 0.7 and cfg.rewards["lin_vel_z"].weight == -2.0
    assert cfg.rewards["track_lin_vel_xy"].params["std"] == cfg.rewards["track_ang_vel_z"].params["std"] == 0.4
    assert list(cfg.events["push_robot"].interval_range_s) == [5.0, 6.0]
    assert list(cfg.commands["base_velocity"].params["lin_vel_x"]) == [0.0, 1.5]
    cfg.backend.num_threads = 1
    assert VelocityEnv(cfg).get_observations()["policy"].shape == (4, 2 * 48)


def test_a_saved_runs_tables_replace_the_tasks_so_a_removed_term_stays_removed():
    import yaml

    from robolab.config import build_env_cfg, to_yaml

    run = build_env_cfg("RoboLab-Velocity-Flat-Go2-v0", {"rewards": {"lin_vel_z": "__remove__"}})
    saved = yaml.safe_load(to_yaml(run))
    again = build_env_cfg("RoboLab-Velocity-Flat-Go2-v0", {"rewards": {"feet_air_time": {"weight": 0.1}}}, saved)
    assert "lin_vel_z" not in again.rewards and again.rewards["feet_air_time"].weight == 0.1


def count_resets(env, mask, step: int):
    """A user's curriculum: a per-env level that rises by ``step`` with each new episode; logs the mean level."""
    levels = env.physics_params.setdefault("level", torch.zeros(env.num_envs))
    levels += step * mask.float()
    return levels.mean()


def test_a_curriculum_term_sees_each_reset_and_is_logged():
    from robolab.envs.terms import CurriculumTermCfg

    cfg = small_cfg(episode_length_s=0.04)  # 2-step episodes
    cfg.curricula["level"] = CurriculumTermCfg(func=f"{__name__}:count_resets", params={"step": 2})
    env = VelocityEnv(cfg)  # every env's first episode: level 2
    _, _, done, extras = env.step(torch.zeros(4, 12))
    assert not done.any() and extras["log"]["Curriculum/level"].item() == pytest.approx(2.0, rel=1e-6)
    env.step(torch.zeros(4, 12))  # every episode ends: level 4
    _, _, done, extras = env.step(torch.zeros(4, 12))
    assert extras["log"]["Curriculum/level"].item() == pytest.approx(4.0, rel=1e-6)
    assert torch.equal(env.physics_params["level"], torch.full((4,), 4.0))


@pytest.mark.parametrize("where", ["term", "group"])
def test_an_observation_history_too_large_is_refused_naming_its_setting_before_any_buffer(where):
    # Left to allocate, a history of gigabytes is zero-filled page by page until the kernel kills the process.
    cfg = default_case()
    cfg.num_envs = 2
    if where == "term":
        cfg.observations["critic"].terms["friction"].history_length = 2**21
        setting = "env.observations.critic.terms.friction.history_length=2097152"
    else:
        cfg.observations["policy"].history_length = 2**15
        setting = "env.observations.policy.history_length=32768"
    with pytest.raises(TermError) as err:
        VelocityEnv(cfg)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{setting}: makes the ") and "(at most 1048576)" in message
