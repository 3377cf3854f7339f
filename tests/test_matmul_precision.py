"""``agent.matmul_precision``: the models' float32 matmuls in TF32 or IEEE on a GPU, the env's step never touched.

The flag is torch's process-wide ``torch.backends.cuda.matmul.fp32_precision``; what can go wrong is where it is
set: an env step run in TF32 (a height scan's frames rounded to 10 bits), a model call left in IEEE, or the flag
leaking out of training (into ``play.py``). These tests record the flag inside every call of a real training run.
"""

from __future__ import annotations

import pytest
import torch

from robolab.matmul_precision import MATMUL_PRECISIONS, models_precision
from robolab.rl_cfg import AgentConfigError, OnPolicyRunnerCfg
from robolab.runners import OnPolicyRunner
from test_rsl_rl_api import tiny_agent


@pytest.fixture(autouse=True)
def restore_flag():
    before = torch.backends.cuda.matmul.fp32_precision
    yield
    torch.backends.cuda.matmul.fp32_precision = before


def flag() -> str:
    return torch.backends.cuda.matmul.fp32_precision


@pytest.mark.parametrize("before", ["none", "ieee", "tf32"])
@pytest.mark.parametrize("inside", MATMUL_PRECISIONS)
def test_the_context_sets_the_flag_and_gives_the_previous_one_back_even_on_error(before, inside):
    torch.backends.cuda.matmul.fp32_precision = before
    with models_precision(inside):
        assert flag() == inside
    assert flag() == before
    with pytest.raises(RuntimeError, match="boom"), models_precision(inside):
        raise RuntimeError("boom")
    assert flag() == before


def test_a_legacy_allow_tf32_setting_survives_the_context():
    """A user's ``torch.backends.cuda.matmul.allow_tf32 = True`` still reads True afterwards (torch refuses a read
    of the legacy flag once the two APIs disagree)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    with models_precision("ieee"):
        pass
    assert torch.backends.cuda.matmul.allow_tf32 is True
    torch.backends.cuda.matmul.fp32_precision = "none"


def recording_runner(precision: str | None):
    """A Go2 runner (tiny models) whose act, step bookkeeping, update, returns and env step record the flag."""
    agent, env_cfg = tiny_agent()
    if precision is not None:
        agent["matmul_precision"] = precision
    from robolab.envs import VelocityEnv

    env = VelocityEnv(env_cfg)
    runner = OnPolicyRunner(env, agent)
    seen: dict[str, set[str]] = {}

    def record(owner, name: str):
        original = getattr(owner, name)

        def wrapped(*args, **kwargs):
            seen.setdefault(name, set()).add(flag())
            return original(*args, **kwargs)

        setattr(owner, name, wrapped)

    for name in ("act", "process_env_step", "update", "compute_returns"):
        record(runner.alg, name)
    record(env, "step")
    return runner, env, seen


@pytest.mark.parametrize("precision", MATMUL_PRECISIONS)
def test_training_runs_the_models_in_the_chosen_precision_and_the_env_in_ieee(precision):
    torch.backends.cuda.matmul.fp32_precision = "none"  # the process's own setting, PyTorch's default
    runner, env, seen = recording_runner(precision)
    runner.learn(2)
    env.close()
    assert seen == {
        "act": {precision},
        "process_env_step": {precision},
        "update": {precision},
        "compute_returns": {precision},
        "step": {"none"},
    }
    assert flag() == "none"  # nothing leaks out of training


def test_the_default_is_tf32():
    runner, env, _ = recording_runner(None)
    assert runner.matmul_precision == OnPolicyRunnerCfg().matmul_precision == "tf32"
    env.close()


def test_a_bad_precision_is_a_one_line_error_naming_it():
    with pytest.raises(AgentConfigError, match=r"^agent.matmul_precision='bf16': allowed: ieee, tf32$"):
        OnPolicyRunnerCfg(matmul_precision="bf16")
    agent, _ = tiny_agent()
    agent["matmul_precision"] = "fp16"
    with pytest.raises(ValueError, match=r"^agent.matmul_precision='fp16': allowed: ieee, tf32$"):
        OnPolicyRunner(None, agent)  # refused before the env is read
