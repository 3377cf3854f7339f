"""An Isaac Lab task's rsl_rl agent config, translated into robolab's agent config.

An Isaac Lab task names its agents by entry point (``rsl_rl_cfg_entry_point``, or the one ``--agent`` names): an
``RslRlOnPolicyRunnerCfg`` or ``RslRlDistillationRunnerCfg`` subclass. Isaac Lab's trainer hands that config's
``to_dict()`` to rsl_rl; robolab hands the same values to its own runners, through the typed schema of
``robolab.rl_cfg``: the translation becomes the Hydra task config, so ``agent.*`` overrides apply on top and are
type- and range-checked like any robolab task's. What robolab cannot translate is a one-line error naming the field.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import warnings
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore

from robolab import rl_cfg, tasks
from robolab.config import ConfigError

# rsl_rl runner class -> (robolab runner config, algorithm config, the algorithm class it trains)
PIPELINES = {
    "OnPolicyRunner": ("on_policy", "ppo", "PPO"),
    "DistillationRunner": ("distillation", "distillation", "Distillation"),
}
MODELS = {"on_policy": ("actor", "critic"), "distillation": ("student", "teacher")}
"""The models, which are also the observation sets rsl_rl's algorithms read (``rnd_state`` too, with RND)."""
ALGORITHM_SCHEMAS = {"ppo": rl_cfg.PpoCfg, "distillation": rl_cfg.DistillationCfg}
RUNNER_KEYS = (
    "num_steps_per_env",
    "max_iterations",
    "save_interval",
    "experiment_name",
    "run_name",
    "logger",
    "check_for_nan",
    "init_at_random_ep_len",
    "clip_actions",
    "torch_compile_mode",
    "obs_groups",
)
# Isaac Lab runner fields robolab takes from elsewhere: the device and rank from --device and the launcher, the
# seed into the config's top-level ``seed``, resume and checkpoint selection from --resume/--load_run/--checkpoint,
# the project from --log_project_name; ``policy`` and ``empirical_normalization`` are folded into the models by
# Isaac Lab's own ``handle_deprecated_rsl_rl_cfg`` first; older rsl_rl's ``store_code_state``: robolab always records
# the git state of the run's code (rsl_rl's ``add_git_repo_to_log``).
TAKEN_ELSEWHERE = {
    "class_name",
    "device",
    "seed",
    "resume",
    "load_run",
    "load_checkpoint",
    "wandb_project",
    "neptune_project",
    "policy",
    "empirical_normalization",
    "store_code_state",
}
STORE_GROUP = "task"
STORE_PREFIX = "isaaclab"


@dataclass
class TaskAgent:
    """An Isaac Lab agent config as robolab's: its pipeline, seed and ``agent.*`` values."""

    runner: str
    algorithm: str
    seed: int
    agent: dict


def resolve(task_id: str, entry: str | None, presets: list[str]):
    """(env config, agent config or None) of ``task_id``, presets resolved as Isaac Lab does (``resolve_task_config``);
    an unknown preset is a one-line error listing the known ones."""
    from isaaclab_tasks.utils import resolve_task_config

    try:
        return resolve_task_config(task_id, entry, overrides=list(presets))
    except ValueError as err:
        raise ConfigError(f"{' '.join(presets)}: {' '.join(str(err).split())}") from None


def load(task_id: str, entry: str, presets: list[str]):
    """(env config, agent config) of ``task_id`` and its agent ``entry``."""
    entries = tasks.agent_entry_points(task_id)
    if entry not in entries:
        have = f"its rsl_rl agent configs: {', '.join(entries)}" if entries else "it has no rsl_rl agent config"
        raise ConfigError(f"--agent={entry!r}: not an agent entry point of {task_id} ({have})")
    return resolve(task_id, entry, presets)


def observation_groups(env_cfg) -> list[str]:
    """The observation groups the env will return: a manager-based env's groups, a direct env's ``policy`` (and
    ``critic`` with a state space), as Isaac Lab's rsl_rl wrapper hands them on."""
    from isaaclab.managers import ObservationGroupCfg

    observations = getattr(env_cfg, "observations", None)
    if observations is not None:
        return [name for name, group in vars(observations).items() if isinstance(group, ObservationGroupCfg)]
    return ["policy", *(["critic"] if getattr(env_cfg, "state_space", None) else [])]


def complete_obs_groups(obs_groups: dict, runner: str, has_rnd: bool, env_groups: list[str]) -> dict:
    """The observation sets as rsl_rl will resolve them (a missing set reads its namesake group, else ``policy``),
    written out, so ``params/agent.yaml`` says what ran and robolab's schema defaults cannot fill them instead."""
    import torch
    from tensordict import TensorDict

    from robolab.rsl_rl_api import resolve_obs_groups

    default_sets = [*MODELS[runner], *(["rnd_state"] if has_rnd else [])]
    observations = TensorDict({group: torch.zeros(0) for group in env_groups}, batch_size=[])  # names are all it reads
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # rsl_rl's advice to write the sets out: robolab does, here
        try:
            return resolve_obs_groups(observations, copy.deepcopy(obs_groups), default_sets)
        except ValueError:  # a group the env lacks: session.check_obs_groups names it once the env is built
            return dict(obs_groups)


def translate(agent_cfg, source: str, env_groups: list[str] | None = None) -> TaskAgent:
    """robolab's values for an Isaac Lab rsl_rl runner config (``source`` names it in errors); ``env_groups``, the
    env's observation groups, complete the observation sets the config leaves to rsl_rl."""
    from isaaclab_rl.rsl_rl import check_rsl_rl_version, handle_deprecated_rsl_rl_cfg

    cfg = handle_deprecated_rsl_rl_cfg(copy.deepcopy(agent_cfg), check_rsl_rl_version())
    values = cfg.to_dict()
    runner_class = values.get("class_name")
    if runner_class not in PIPELINES:
        raise ConfigError(f"{source}: class_name={runner_class!r}: robolab translates {', '.join(PIPELINES)}")
    runner, algorithm, algorithm_class = PIPELINES[runner_class]
    models = MODELS[runner]
    unknown = sorted(set(values) - set(RUNNER_KEYS) - TAKEN_ELSEWHERE - set(models) - {"algorithm"})
    if unknown:
        raise ConfigError(f"{source}: {unknown[0]}={values[unknown[0]]!r}: robolab's runners have no such setting")
    alg = dict(values["algorithm"])
    if alg.pop("class_name", None) != algorithm_class:
        raise ConfigError(
            f"{source}: algorithm.class_name={values['algorithm'].get('class_name')!r}: robolab translates "
            f"{algorithm_class} for {runner_class}"
        )
    known = {f.name for f in dataclasses.fields(ALGORITHM_SCHEMAS[algorithm])}
    for key in sorted(alg):
        if key not in known:
            raise ConfigError(
                f"{source}: algorithm.{key}={alg[key]!r}: robolab's {algorithm_class} has no such setting"
            )
    agent = {key: values[key] for key in RUNNER_KEYS if key in values}
    agent.update({model: values[model] for model in models})
    agent["algorithm"] = alg
    if env_groups is not None:
        agent["obs_groups"] = complete_obs_groups(agent["obs_groups"], runner, bool(alg.get("rnd_cfg")), env_groups)
    return TaskAgent(runner, algorithm, int(values.get("seed", 42)), agent)


def for_pipeline(task_agent: TaskAgent, runner: str, algorithm: str, source: str) -> dict:
    """The ``agent.*`` values for the pipeline the run uses (the task's own unless ``runner=``/``algorithm=`` pick
    another): PPO's settings carry over to AMP; distilling a PPO task keeps its runner settings and takes its actor as
    the teacher's architecture (the teacher was trained with it)."""
    agent = copy.deepcopy(task_agent.agent)
    if runner == task_agent.runner and algorithm == task_agent.algorithm:
        return agent
    if task_agent.algorithm == "ppo" and algorithm == "ppo_amp":
        return agent
    if task_agent.algorithm == "ppo" and runner == "distillation":
        actor_groups = agent.pop("obs_groups").get("actor", ["policy"])
        agent["obs_groups"] = {"student": actor_groups, "teacher": ["teacher"]}
        agent["teacher"] = agent.pop("actor")
        for key in ("critic", "algorithm"):
            agent.pop(key)
        return agent
    raise ConfigError(
        f"runner={runner} algorithm={algorithm}: {source} is a {task_agent.algorithm} agent; pick a PPO agent with "
        "--agent (robolab distils PPO agents and trains them with PPO or AMP)"
    )


def store_task_config(
    task_id: str, entry: str, presets: list[str], runner: str | None, algorithm: str | None
) -> tuple[str, list[str]]:
    """Put ``task_id``'s translated agent in Hydra's ConfigStore as a task config; returns its name and the
    overrides that go before the user's (the task's pipeline where the user picks none, and its seed)."""
    source = f"{task_id} {entry}"
    env_cfg, agent_cfg = load(task_id, entry, presets)
    task_agent = translate(agent_cfg, source, observation_groups(env_cfg))
    pipeline = [] if runner or algorithm else [f"runner={task_agent.runner}", f"algorithm={task_agent.algorithm}"]
    agent = for_pipeline(task_agent, runner or task_agent.runner, algorithm or task_agent.algorithm, source)
    name = f"{STORE_PREFIX}__{task_id}__{entry}"
    ConfigStore.instance().store(group=STORE_GROUP, name=name, node={"agent": agent}, package="_global_")
    return name, [*pipeline, f"seed={task_agent.seed}"]
