"""The boundary to rsl_rl: the names robolab uses still exist with the same parameters, and robolab's own
training loop (``OnPolicyRunner.learn``, overridden whole) trains exactly as rsl_rl's does."""

from __future__ import annotations

import inspect
import sys
import types

import torch

from conftest import run
from robolab import rsl_rl_api
from robolab.algorithms import PPO
from robolab.config import agent_dict, compose
from robolab.envs import VelocityEnv
from robolab.runners import OnPolicyRunner
from robolab.tasks import load_env_cfg

TASK = "RoboLab-Velocity-Flat-Go2-v0"


def test_installed_rsl_rl_matches_the_surface_robolab_uses():
    problems = rsl_rl_api.surface_mismatches()
    assert not problems, (
        f"rsl-rl-lib {rsl_rl_api.rsl_rl_version()} changed what robolab relies on "
        f"(update robolab/rsl_rl_api.py and its users): " + "; ".join(problems)
    )


def test_surface_check_notices_a_changed_signature(monkeypatch):
    def update(self, extra_argument):  # what an upgrade that re-signs PPO.update would look like
        return {}

    monkeypatch.setattr(rsl_rl_api.PPO, "update", update)
    assert rsl_rl_api.surface_mismatches() == ["PPO.update: parameters ('extra_argument',), robolab expects ()"]


def tiny_agent(num_envs: int = 8) -> tuple[dict, object]:
    cfg = compose(
        TASK,
        [
            f"env.num_envs={num_envs}",
            "agent.num_steps_per_env=6",
            "agent.actor.hidden_dims=[16]",
            "agent.critic.hidden_dims=[16]",
            "agent.algorithm.num_mini_batches=2",
            "agent.algorithm.num_learning_epochs=2",
        ],
    )
    env_cfg = load_env_cfg(TASK)
    env_cfg.num_envs, env_cfg.backend.num_threads = num_envs, 0
    return agent_dict(cfg), env_cfg


def test_robolab_ppo_exposes_what_it_reads_from_rsl_rl():
    agent, env_cfg = tiny_agent()
    env = VelocityEnv(env_cfg)
    runner = OnPolicyRunner(env, agent)
    assert isinstance(runner.alg, PPO)
    missing = [a for a in rsl_rl_api.PPO_ATTRIBUTES if not hasattr(runner.alg, a)]
    assert not missing, f"rsl_rl's PPO no longer sets {missing}"
    env.close()


def test_robolab_learn_loop_trains_exactly_like_rsl_rls(tmp_path):
    """Same env, seed and config: robolab's loop and rsl_rl's own give bit-identical models after 3 iterations."""
    finals = {}
    for name, runner_class in (("robolab", OnPolicyRunner), ("rsl_rl", rsl_rl_api.OnPolicyRunner)):
        agent, env_cfg = tiny_agent()
        env = VelocityEnv(env_cfg)
        torch.manual_seed(7)
        runner = runner_class(env, agent, log_dir=None, device="cpu")
        runner.learn(3, init_at_random_ep_len=True)
        finals[name] = {k: v.clone() for k, v in runner.alg.get_policy().state_dict().items()}
        finals[name]["lr"] = torch.tensor(runner.alg.learning_rate)
        env.close()
    assert finals["robolab"].keys() == finals["rsl_rl"].keys()
    for key, value in finals["rsl_rl"].items():
        torch.testing.assert_close(finals["robolab"][key], value, rtol=0, atol=0, msg=f"{key} differs")
    # and training did move the policy (the comparison is not between two untouched models)
    agent, env_cfg = tiny_agent()
    env = VelocityEnv(env_cfg)
    torch.manual_seed(7)
    fresh = OnPolicyRunner(env, agent).alg.get_policy().state_dict()
    assert any(not torch.equal(fresh[k], finals["robolab"][k]) for k in fresh)
    env.close()


def test_robolab_distillation_and_models_expose_what_the_updates_read_from_rsl_rl():
    from test_distillation_update import build

    alg = build(rsl_rl_api.Distillation, recurrent=False)
    missing = [a for a in rsl_rl_api.DISTILLATION_ATTRIBUTES if not hasattr(alg, a)]
    assert not missing, f"rsl_rl's Distillation no longer sets {missing}"
    properties = ("output_entropy", "output_distribution_params", "is_recurrent")
    missing = [name for name in properties if not hasattr(type(alg.student), name)]
    assert not missing, f"rsl_rl's MLPModel no longer has {missing}"


# --- the log packages rsl_rl imports: executed only when a writer uses them -------------------------------------
def test_a_deferred_package_runs_at_its_first_use_and_not_for_inspect(tmp_path, monkeypatch):
    package = tmp_path / "robolab_deferred_probe"
    package.mkdir()
    (package / "__init__.py").write_text("import sys\nsys.robolab_probe_runs += 1\nVALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "robolab_deferred_probe", raising=False)
    monkeypatch.setattr(sys, "robolab_probe_runs", 0, raising=False)
    rsl_rl_api.defer_import("robolab_deferred_probe")
    import robolab_deferred_probe as probe  # what rsl_rl's writers do: the module object, nothing run yet

    inspect.getmodule(test_a_deferred_package_runs_at_its_first_use_and_not_for_inspect)  # reads every __file__
    assert probe.__file__ == str(package / "__init__.py")
    assert sys.robolab_probe_runs == 0
    assert probe.VALUE == 7 and probe.VALUE == 7
    assert sys.robolab_probe_runs == 1 and type(probe) is types.ModuleType
    rsl_rl_api.defer_import("robolab_no_such_package")  # a package that is not installed stays missing
    assert "robolab_no_such_package" not in sys.modules


def test_rsl_rl_leaves_wandb_and_neptune_unexecuted_until_a_writer_uses_them():
    code = (
        "import sys, robolab.rsl_rl_api, rsl_rl.utils.wandb_log_writer as w, rsl_rl.utils.neptune_log_writer as n\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('wandb', 'neptune')))\n"
        "print(w.wandb is sys.modules['wandb'], n.neptune is sys.modules['neptune'])\n"
        "print(callable(w.wandb.init), 'wandb.sdk' in sys.modules, 'neptune.objects' in sys.modules)\n"
    )
    res = run([sys.executable, "-c", code])
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines() == ["['neptune', 'wandb']", "True True", "True True False"]
