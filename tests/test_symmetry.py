"""Left-right symmetry derived from names, axes and the observation table (``robolab.envs.symmetry``): an
involution, the Go2's equal to one written by hand, physically right (mirrored actions from a symmetric pose give
mirrored observations on the Go2 and the G1), and rsl_rl's mirror loss makes a policy more symmetric."""

from __future__ import annotations

import mujoco
import pytest
import torch

from robolab.envs import VelocityEnv
from robolab.envs.symmetry import Mirror, mirror_augmentation, mirror_name
from robolab.envs.terms import ObsTermCfg
from robolab.tasks.velocity.g1.env_cfgs import G1FlatEnvCfg
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg, Go2RoughEnvCfg
from test_randomization import REALISM, RECORDED
from test_terrain import small_terrain


def _env(cls, **changes) -> VelocityEnv:
    cfg = cls(**{"num_envs": 4, "seed": 0, **changes})
    cfg.backend.num_threads = 1
    return VelocityEnv(cfg)


@pytest.mark.parametrize(
    "name, mirrored",
    [
        ("FL_hip_joint", "FR_hip_joint"),
        ("RR_calf_joint", "RL_calf_joint"),
        ("left_knee_joint", "right_knee_joint"),
        ("LeftAnkle", "RightAnkle"),
        ("L_hip", "R_hip"),
        ("waist_yaw_joint", "waist_yaw_joint"),
        ("torso_link", "torso_link"),
    ],
)
def test_a_name_mirrors_by_its_side_token(name, mirrored):
    assert mirror_name(name) == mirrored and mirror_name(mirrored) == name


@pytest.mark.parametrize("task", ["go2_flat", "go2_rough", "g1_flat", "go2_realism"])
def test_mirroring_twice_gives_back_every_group_and_the_actions(task):
    if task == "go2_rough":
        env = _env(Go2RoughEnvCfg, terrain=small_terrain())
    elif task == "g1_flat":
        env = _env(G1FlatEnvCfg)
    else:
        cfg = Go2FlatEnvCfg(num_envs=4, seed=0)
        cfg.backend.num_threads = 1
        if task == "go2_realism":
            cfg.events.update(REALISM)
            cfg.events["physics_material"].params["per_foot"] = True
            for name in RECORDED:
                if name != "link_mass_scale":
                    cfg.observations["critic"].terms[name] = ObsTermCfg(func="physics_param", params={"name": name})
        env = VelocityEnv(cfg)
    try:
        obs = env.get_observations()
        mirror = Mirror.of(env)
        once = mirror.observations(obs)
        assert any(not torch.equal(once[k], obs[k]) for k in obs.keys())  # noqa: SIM118 (a TensorDict iterates its batch)
        for group in obs.keys():  # noqa: SIM118
            torch.testing.assert_close(mirror.observations(once)[group], obs[group], rtol=0, atol=0)
        actions = torch.randn(4, env.num_actions)
        torch.testing.assert_close(mirror.actions(mirror.actions(actions)), actions, rtol=0, atol=0)
        augmented, augmented_actions = mirror_augmentation(env, obs, actions)
        assert augmented["policy"].shape[0] == 8 and torch.equal(augmented_actions[4:], mirror.actions(actions))
    finally:
        env.close()


def test_the_go2s_derived_mirror_equals_the_one_written_by_hand():
    env = _env(Go2FlatEnvCfg)
    try:
        mirror = Mirror.of(env)
        # legs FL FR RL RR, each hip (abduction, about x: flips), thigh and calf (about y: keep)
        legs = [3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8]
        signs = [-1.0, 1.0, 1.0] * 4
        assert mirror.joint_partner == legs and mirror.joint_sign.tolist() == signs
        index, sign = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [1, -1, 1, -1, 1, -1, 1, -1, 1, 1, -1, -1]
        for offset in (12, 24, 36):  # joint positions, joint velocities, last actions
            index += [offset + j for j in legs]
            sign += signs
        got_index, got_sign = mirror.groups["policy"]
        assert got_index.tolist() == index and got_sign.tolist() == sign
    finally:
        env.close()


@pytest.mark.parametrize(
    "cls, height, tolerance",
    [(Go2FlatEnvCfg, None, 1e-6), (G1FlatEnvCfg, 3.0, 5e-3)],
    ids=["go2_on_the_ground", "g1_in_the_air"],
)
def test_mirrored_actions_from_a_symmetric_pose_give_mirrored_observations(cls, height, tolerance):
    """The proof the signs are physics, not bookkeeping: two envs of one physics variant start in the same
    symmetric rest pose, one is given actions and a command, the other their mirror images; what each then observes
    must be the other's mirror. The Go2 is exactly symmetric: the same to float precision, walking on the ground.
    The G1's published torso is not (its centre of mass 0.7 mm off the plane): in the air, within 5e-3 (on the
    ground its contacts amplify that to 2 rad/s in 8 steps)."""
    cfg = cls(num_envs=2, seed=0)
    cfg.backend.num_threads, cfg.backend.num_variants = 1, 1
    cfg.observations["policy"].enable_corruption = False
    cfg.events["push_robot"].params["velocity_range"] = 0.0
    env = VelocityEnv(cfg)
    try:
        mirror = Mirror.of(env)
        qpos = torch.tensor(env.robot.model.key_qpos[0], dtype=torch.float32).repeat(2, 1)
        qpos[:, 2] = cfg.robot.init_base_height if height is None else height
        qpos[:, 7:] = env.default_joint_pos
        env.backend.reset(torch.ones(2, dtype=torch.bool), qpos, torch.zeros(2, env.robot.model.nv))
        command = env.command_terms["base_velocity"]
        g = torch.Generator().manual_seed(0)
        for _ in range(8):
            command.command[0] = torch.tensor([0.5, 0.2, 0.3])
            command.command[1] = torch.tensor([0.5, -0.2, -0.3])
            action = 0.3 * torch.randn(1, env.num_actions, generator=g)
            obs, _, dones, _ = env.step(torch.cat([action, mirror.actions(action)]))
            assert not dones.any()
        policy = obs["policy"]
        assert policy[0, 1].abs() > 1e-3  # it moved sideways (the mirror would hide nothing on a still robot)
        mirrored = mirror.observations({"policy": policy[:1]})["policy"]
        torch.testing.assert_close(mirrored, policy[1:], atol=tolerance, rtol=0)
    finally:
        env.close()


def doubled_gravity(env) -> torch.Tensor:
    """A user's own observation term."""
    return 2.0 * env.state.projected_gravity


@pytest.mark.parametrize(
    "mirror, message",
    [
        (None, "symmetry: env.observations.policy.terms.mine (doubled_gravity) has no known mirror; declare it: "),
        ("sideways", "env.observations.policy.terms.mine.mirror='sideways': must be one of invariant, vector"),
        ("vector", None),
    ],
)
def test_a_users_term_mirrors_as_it_declares_and_an_undeclared_one_is_named(mirror, message):
    cfg = Go2FlatEnvCfg(num_envs=2, seed=0)
    cfg.backend.num_threads = 1
    cfg.observations["policy"].terms["mine"] = ObsTermCfg(func="test_symmetry:doubled_gravity", mirror=mirror)
    env = VelocityEnv(cfg)
    try:
        if message is None:
            assert Mirror.of(env).groups["policy"][1][-3:].tolist() == [1, -1, 1]
        else:
            with pytest.raises(ValueError) as err:
                Mirror.of(env)
            assert message in str(err.value) and "\n" not in str(err.value)
    finally:
        env.close()


def test_training_with_the_mirror_loss_makes_the_policy_more_symmetric(tmp_path):
    from conftest import tiny_runner_cfg
    from robolab.runners import OnPolicyRunner

    def mirror_error(runner, env) -> float:
        obs = env.get_observations()
        mirror = Mirror.of(env)
        actor = runner.alg.actor
        with torch.no_grad():
            return float((actor(mirror.observations(obs)) - mirror.actions(actor(obs))).square().mean())

    errors = {}
    for use in (False, True):
        torch.manual_seed(0)
        env = _env(Go2FlatEnvCfg, num_envs=16)
        symmetry = {
            "data_augmentation_func": "robolab.envs.symmetry:mirror_augmentation",
            "use_data_augmentation": False,
            "use_mirror_loss": use,
            "mirror_loss_coeff": 10.0,
        }
        cfg = tiny_runner_cfg(32, class_name="robolab.algorithms:PPO", num_learning_epochs=4, symmetry_cfg=symmetry)
        cfg["num_steps_per_env"] = 8
        runner = OnPolicyRunner(env, cfg, log_dir=str(tmp_path / str(use)), device="cpu")
        runner.learn(8)
        errors[use] = mirror_error(runner, env)
        env.close()
    # measured: 0.23 without the loss, 0.011 with it (mean squared, 8 iterations of 16 envs)
    assert errors[True] < 0.5 * errors[False], errors


def test_what_cannot_be_mirrored_is_a_one_line_error_naming_it():
    from robolab.envs.symmetry import joint_signs, partners

    with pytest.raises(ValueError, match="symmetry: joints without a mirror image among them: FL_hip -> FR_hip"):
        partners(["FL_hip", "RR_hip", "RL_hip"], "joints")
    spec = mujoco.MjSpec()
    for side, axis in (("left", [1, 0, 0]), ("right", [0, 1, 0])):  # roll on the left, pitch on the right
        body = spec.worldbody.add_body(name=f"{side}_leg")
        body.add_geom(size=[0.05, 0, 0])
        body.add_joint(name=f"{side}_joint", axis=axis)
    with pytest.raises(
        ValueError, match="symmetry: joints whose axes are not mirror images at rest: left_joint ~ right_joint"
    ):
        joint_signs(spec.compile(), ["left_joint", "right_joint"], [1, 0])

    cfg = Go2FlatEnvCfg(num_envs=2, seed=0)
    cfg.backend.num_threads = 1
    cfg.robot.default_joint_pos = [0.3, *cfg.robot.default_joint_pos[1:]]  # FL hip out further than FR's
    env = VelocityEnv(cfg)
    try:
        with pytest.raises(ValueError, match="env.robot.default_joint_pos is not its own mirror image"):
            Mirror.of(env)
    finally:
        env.close()

    cfg = Go2FlatEnvCfg(num_envs=2, seed=0)
    cfg.backend.num_threads = 1
    cfg.observations["policy"].terms["joint_pos"].mirror = "vector"
    env = VelocityEnv(cfg)
    try:
        with pytest.raises(
            ValueError,
            match="symmetry: env.observations.policy.terms.joint_pos is 12 wide; a 'vector' term has 3 columns",
        ):
            Mirror.of(env)
    finally:
        env.close()

    env = _env(Go2FlatEnvCfg, num_envs=2)
    try:
        with pytest.raises(ValueError, match="symmetry: no mirror for the observation group 'amp' \\(have: policy"):
            Mirror.of(env).observations({"amp": torch.zeros(2, 3)})
    finally:
        env.close()
