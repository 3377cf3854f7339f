"""A PPO run that starts from another run's policy: ``--init_policy`` (a distilled student or a PPO actor) and the
critic's warm-up (``agent.algorithm.critic_warmup_updates``) that keeps the loaded policy still until the fresh
critic has learned its returns."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from rsl_rl.algorithms import PPO as RslRlPPO
from rsl_rl.models import MLPModel, RNNModel
from rsl_rl.storage import RolloutStorage
from tensordict import TensorDict

from conftest import TINY, run, train_cmd
from robolab import checkpoint
from robolab.algorithms import PPO
from robolab.rl_cfg import AgentConfigError, OnPolicyRunnerCfg, PpoCfg
from robolab.runners import OnPolicyRunner
from test_terrain import SMALL_OVERRIDES

ENVS, STEPS, OBS, ACT = 8, 6, 5, 3


def filled_ppo(cls, recurrent: bool = False, **kwargs):
    """``cls`` (robolab's or rsl_rl's PPO) with one rollout of fixed random data in its storage, from one seed."""
    g = torch.Generator().manual_seed(7)
    obs = [
        TensorDict({"policy": x, "critic": x}, batch_size=[ENVS])
        for x in torch.randn(STEPS + 1, ENVS, OBS, generator=g)
    ]
    torch.manual_seed(0)
    groups = {"actor": ["policy"], "critic": ["critic"]}
    dist = {"class_name": "GaussianDistribution", "init_std": 0.5}
    actor_cls, extra = (RNNModel, {"rnn_type": "gru", "rnn_hidden_dim": 8}) if recurrent else (MLPModel, {})
    actor = actor_cls(
        obs[0], groups, "actor", ACT, hidden_dims=[16], obs_normalization=True, distribution_cfg=dist, **extra
    )
    critic = MLPModel(obs[0], groups, "critic", 1, hidden_dims=[16], obs_normalization=True)
    storage = RolloutStorage("rl", ENVS, STEPS, obs[0], [ACT], "cpu")
    alg = cls(actor, critic, storage, num_learning_epochs=2, num_mini_batches=2, learning_rate=1e-3, **kwargs)
    with torch.inference_mode():  # as the runner collects
        for t in range(STEPS):
            alg.act(obs[t])
            rewards, dones = torch.randn(ENVS, generator=g), torch.rand(ENVS, generator=g) < 0.2
            alg.process_env_step(obs[t + 1], rewards, dones, {})
        alg.compute_returns(obs[STEPS])
    return alg


def weights(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Parameters only (the observation normaliser's running statistics move in every update, by design)."""
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def changed(before: dict[str, torch.Tensor], module: torch.nn.Module) -> list[str]:
    return [name for name, p in module.named_parameters() if not torch.equal(before[name], p.detach())]


@pytest.mark.parametrize("recurrent", [False, True], ids=["mlp", "gru"])
def test_warm_up_trains_the_critic_alone_then_ppo_goes_on_as_rsl_rl_does(recurrent):
    alg = filled_ppo(PPO, recurrent, critic_warmup_updates=2)
    actor_before, critic_before, lr = weights(alg.actor), weights(alg.critic), alg.learning_rate
    for _ in range(2):
        alg.update()
        assert changed(actor_before, alg.actor) == []  # the std included: it is a parameter of the actor
        assert alg.learning_rate == lr and all(g["lr"] == lr for g in alg.optimizer.param_groups)
        assert all(p.requires_grad for p in alg.actor.parameters())
    assert changed(critic_before, alg.critic)  # the critic learned meanwhile
    alg.update()
    assert set(changed(actor_before, alg.actor)) == set(actor_before)  # the third update moves the actor


def test_a_resumed_run_does_not_warm_up_again():
    """Loaded at iteration 9, a run with 5 warm-up updates has made 10 updates: its next one trains the actor."""
    saved = filled_ppo(PPO, critic_warmup_updates=5).save()
    saved["iter"] = 9
    alg = filled_ppo(PPO, critic_warmup_updates=5)
    assert alg.load(saved, None, strict=True) and alg.updates_done == 10
    before = weights(alg.actor)
    alg.update()
    assert set(changed(before, alg.actor)) == set(before)


def test_without_warm_up_the_update_is_rsl_rl_s():
    ours, theirs = filled_ppo(PPO, critic_warmup_updates=0), filled_ppo(RslRlPPO)
    for alg in (ours, theirs):
        torch.manual_seed(1)  # the same mini-batch shuffle
        alg.update()
    for name, p in ours.actor.state_dict().items():
        torch.testing.assert_close(p, theirs.actor.state_dict()[name], rtol=1e-5, atol=1e-6, msg=name)
    # The learning rate is a float32 tensor on the device (tests/test_ppo_update.py), rsl_rl's a Python float.
    assert ours.learning_rate == pytest.approx(theirs.learning_rate, rel=1e-6)


def test_warm_up_of_a_negative_count_is_a_one_line_error():
    with pytest.raises(AgentConfigError) as err:
        PpoCfg(critic_warmup_updates=-1)
    assert str(err.value) == "agent.algorithm.critic_warmup_updates=-1: must be an integer >= 0"


class RecordingEnv:
    """Stands in for the env: keeps what ``load_state_dict`` was given; its own state has ``keys``."""

    def __init__(self, keys: tuple[str, ...] = ("terrain.levels",)) -> None:
        self.keys, self.state = keys, None

    def state_dict(self) -> dict:
        return {key: torch.zeros(4) for key in self.keys}

    def load_state_dict(self, state: dict) -> None:
        self.state = state


def runner_around(actor: torch.nn.Module, env: RecordingEnv, **cfg) -> SimpleNamespace:
    """What ``OnPolicyRunner.load_policy`` reads of its runner, around a given actor and env."""
    runner = SimpleNamespace(device="cpu", alg=SimpleNamespace(get_policy=lambda: actor), env=env, cfg=dict(cfg))
    runner.gpu_world_size, runner.gpu_global_rank = 1, 0
    runner._restore_env_state = lambda states: OnPolicyRunner._restore_env_state(runner, states)
    runner._local_env_state = lambda: OnPolicyRunner._local_env_state(runner)
    return runner


@pytest.mark.parametrize("role", ["student", "actor"])
def test_load_policy_takes_a_students_or_an_actors_weights_and_the_levels(tmp_path, role):
    torch.manual_seed(0)
    obs = TensorDict({"policy": torch.zeros(2, OBS)}, batch_size=[2])
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0}
    actor, trained = (
        MLPModel(obs, {"actor": ["policy"]}, "actor", ACT, [16], obs_normalization=True, distribution_cfg=dist)
        for _ in range(2)
    )
    levels = torch.tensor([3, 1, 4, 1])
    path = str(tmp_path / "model_5.pt")
    checkpoint.save_atomic(
        {f"{role}_state_dict": trained.state_dict(), "env_state": [{"terrain.levels": levels}]}, path
    )
    env = RecordingEnv()
    OnPolicyRunner.load_policy(runner_around(actor, env), path)
    for name, tensor in trained.state_dict().items():
        assert torch.equal(actor.state_dict()[name], tensor), name
    assert env.state is not None and torch.equal(env.state["terrain.levels"], levels)


def test_load_policy_keeps_this_tasks_env_state_when_the_saved_one_is_of_another_kind(tmp_path):
    """A flat task's checkpoint (command ranges, no terrain) starting a rough run: the policy loads, the rough env's
    curriculum and commands stay its own."""
    obs = TensorDict({"policy": torch.zeros(2, OBS)}, batch_size=[2])
    actor = MLPModel(obs, {"actor": ["policy"]}, "actor", ACT, [16])
    path = str(tmp_path / "model_3.pt")
    flat_state = {"command.base_velocity.lin_vel_x": torch.tensor([-1.0, 1.0])}
    checkpoint.save_atomic({"actor_state_dict": actor.state_dict(), "env_state": [flat_state]}, path)
    env = RecordingEnv(keys=("terrain.levels", "command.base_velocity.lin_vel_x"))
    OnPolicyRunner.load_policy(runner_around(actor, env), path)
    assert env.state is None


@pytest.mark.parametrize("std_type", ["scalar", "log"])
def test_init_policy_std_sets_the_loaded_policys_noise(tmp_path, std_type):
    obs = TensorDict({"policy": torch.zeros(2, OBS)}, batch_size=[2])
    dist = {"class_name": "GaussianDistribution", "init_std": 0.1, "std_type": std_type}
    actor = MLPModel(obs, {"actor": ["policy"]}, "actor", ACT, [16], distribution_cfg=dist)
    path = str(tmp_path / "model_1.pt")
    checkpoint.save_atomic({"student_state_dict": actor.state_dict()}, path)
    OnPolicyRunner.load_policy(runner_around(actor, RecordingEnv(), init_policy_std=0.5), path)
    actor(obs, stochastic_output=True)
    torch.testing.assert_close(
        actor.output_std, torch.full((2, ACT), 0.5), rtol=1e-6, atol=0.0
    )  # exp(log 0.5) for "log"


def test_init_policy_std_of_a_policy_without_noise_is_a_one_line_error(tmp_path):
    obs = TensorDict({"policy": torch.zeros(2, OBS)}, batch_size=[2])
    actor = MLPModel(obs, {"actor": ["policy"]}, "actor", ACT, [16])
    path = str(tmp_path / "model_1.pt")
    checkpoint.save_atomic({"actor_state_dict": actor.state_dict()}, path)
    with pytest.raises(ValueError, match=r"^agent.init_policy_std=0.5: the policy has no learned action noise"):
        OnPolicyRunner.load_policy(runner_around(actor, RecordingEnv(), init_policy_std=0.5), path)
    with pytest.raises(AgentConfigError, match=r"^agent.init_policy_std=0: must be None or a finite number > 0$"):
        OnPolicyRunnerCfg(init_policy_std=0)


def test_load_policy_of_a_file_without_one_changes_nothing(tmp_path):
    obs = TensorDict({"policy": torch.zeros(2, OBS)}, batch_size=[2])
    actor = MLPModel(obs, {"actor": ["policy"]}, "actor", ACT, [16])
    before = weights(actor)
    path = str(tmp_path / "model_0.pt")
    checkpoint.save_atomic({"critic_state_dict": {}}, path)
    env = RecordingEnv()
    with pytest.raises(checkpoint.CheckpointError, match="holds no policy"):
        OnPolicyRunner.load_policy(runner_around(actor, env), path)
    assert changed(before, actor) == [] and env.state is None


STUDENT_TASK = "RoboLab-Velocity-Rough-Go2-Distillation-v0"
FINETUNE_TASK = "RoboLab-Velocity-Rough-Go2-Blind-Finetune-v0"
ROUGH_SMALL = [*TINY, *SMALL_OVERRIDES]
STUDENT_NETS = ["agent.student.hidden_dims=[32,32]", "agent.student.rnn_hidden_dim=16"]
FINETUNE_NETS = ["agent.actor.hidden_dims=[32,32]", "agent.actor.rnn_hidden_dim=16"]


@pytest.mark.slow
def test_a_distilled_student_is_trained_on_by_ppo_from_its_own_weights_and_levels(tmp_path):
    """Teacher, student, PPO on the student: the three stages of the rough pipeline, end to end; the fine-tuned run
    starts with the student's exact weights and its curriculum's levels, and resumes as its own run."""
    ppo_only = ("agent.algorithm.", "agent.actor.", "agent.critic.")
    logs = str(tmp_path)
    teacher = ["--task", "RoboLab-Velocity-Rough-Go2-Teacher-v0", *ROUGH_SMALL, "--max_iterations", "1"]
    assert run(train_cmd(*teacher, "--log_root", logs)).returncode == 0
    student = [
        "--task",
        STUDENT_TASK,
        *[arg for arg in ROUGH_SMALL if not arg.startswith(ppo_only)],
        *STUDENT_NETS,
        "agent.teacher_experiment=go2_rough_teacher",
        "agent.teacher.hidden_dims=[32,32]",
        "--max_iterations",
        "2",
    ]
    res = run(train_cmd(*student, "--log_root", logs))
    assert res.returncode == 0, res.stderr[-3000:]
    student_file = next(tmp_path.glob("go2_rough_distillation/*/model_1.pt"))
    # The newest distillation checkpoint is the default start (agent.init_policy_experiment).
    finetune = ["--task", FINETUNE_TASK, *ROUGH_SMALL, *FINETUNE_NETS, "agent.algorithm.critic_warmup_updates=1"]
    res = run(train_cmd(*finetune, "--max_iterations", "2", "--log_root", logs))
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"policy started from the student of {student_file}" in res.stdout
    assert "the curriculum continues from its levels" in res.stdout  # the same env kind: its levels carried on
    run_dir = next(tmp_path.glob("go2_rough_blind_finetune/*"))
    saved_student = torch.load(student_file, weights_only=True)
    first = torch.load(run_dir / "model_0.pt", weights_only=True)  # after one update: the critic's warm-up
    for name, tensor in saved_student["student_state_dict"].items():
        if "normalizer" not in name:  # the normaliser keeps its running statistics
            assert torch.equal(first["actor_state_dict"][name], tensor), name
    last = torch.load(run_dir / "model_1.pt", weights_only=True)
    assert not torch.equal(
        last["actor_state_dict"]["mlp.0.weight"], saved_student["student_state_dict"]["mlp.0.weight"]
    )
    assert first["iter"] == 0 and "critic_state_dict" in first
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 2
    # A resume of the fine-tuned run continues it; the student is not loaded again.
    res = run(train_cmd(*finetune, "--max_iterations", "3", "--log_root", logs, "--resume"))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "policy started from" not in res.stdout and "resumed" in res.stdout


@pytest.mark.slow
def test_init_policy_errors_are_one_line(tmp_path):
    logs = str(tmp_path)

    def refused(policy, *args: str) -> list[str]:
        """stderr of a start with ``--init_policy policy`` that must fail as bad input."""
        res = run(train_cmd(*args, "--max_iterations", "1", "--log_root", logs, "--init_policy", str(policy)))
        assert res.returncode == 2, res.stderr[-2000:]
        return res.stderr.strip().splitlines()

    missing = tmp_path / "none.pt"
    assert refused(missing, *TINY) == [f"error: --init_policy={str(missing)!r}: no such file"]
    # A PPO checkpoint of other sizes: the first tensor that differs, named.
    assert run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", logs)).returncode == 0
    other = next(tmp_path.glob("go2_flat/*/model_0.pt"))
    (line,) = refused(other, *TINY, "agent.actor.hidden_dims=[16]")
    assert f"--init_policy={str(other)!r}" in line and "'mlp.0.weight' has shape (32, 48)" in line
    assert "agent.actor must match it" in line
    # Distillation runs have a teacher, not an initial policy.
    assert refused(other, "--task", "RoboLab-Velocity-Flat-Go2-Distillation-v0") == [
        "error: --init_policy: only PPO runs start from a policy (runner=on_policy or amp)"
    ]
    assert not list(tmp_path.glob("go2_flat_distillation"))  # nothing written
    # A noise for a loaded policy, in a run that loads none, would do nothing: refused before anything is written.
    runs_before = sorted(tmp_path.glob("go2_flat/*"))
    res = run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", logs, "agent.init_policy_std=0.5"))
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "error: agent.init_policy_std=0.5: sets the noise of a policy loaded by --init_policy or "
        "agent.init_policy_experiment, and this run loads none"
    ]
    assert sorted(tmp_path.glob("go2_flat/*")) == runs_before
