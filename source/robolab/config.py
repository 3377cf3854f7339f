"""Hydra composition of the training config, and its split into the env dataclass and the agent dict.

The config tree ships inside the package (``robolab.hydra_configs``, the repository's ``config/``) and is read
through ``importlib.resources``, so a wheel finds it as well as a checkout. ``$ROBOLAB_CONFIG_DIR`` points at
another tree. Agent values are typed by ``robolab.rl_cfg`` and env values by the task's env dataclass.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from importlib import resources
from pathlib import Path

import hydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from robolab import tasks
from robolab.rl_cfg import AgentConfigError, register_schemas

CONFIG_MODULE = "robolab.hydra_configs"
PRESET_TOKENS = ("presets", "physics", "renderer")
"""Isaac Lab's preset selectors (``physics=newton_mjwarp``, ``presets=a,b``): handed to Isaac Lab, not to Hydra."""
# Training pipelines: each runner config works with exactly one algorithm config.
PIPELINES = {"on_policy": "ppo", "amp": "ppo_amp", "distillation": "distillation"}


class ConfigError(ValueError):
    """A bad override or config value; the message is one line and names the offending key."""


def config_source() -> str:
    """Where Hydra reads ``train.yaml``: ``$ROBOLAB_CONFIG_DIR``, else the installed ``robolab.hydra_configs``, else
    (a checkout put on ``PYTHONPATH`` without installing it) the checkout's ``config/``."""
    path = os.environ.get("ROBOLAB_CONFIG_DIR")
    if not path:
        if importlib.util.find_spec(CONFIG_MODULE) is not None:
            return f"pkg://{CONFIG_MODULE}"
        path = str(Path(__file__).resolve().parents[2] / "config")
    if not os.path.isfile(os.path.join(path, "train.yaml")):
        raise ConfigError(f"config directory {path!r} has no train.yaml (install robolab, or set ROBOLAB_CONFIG_DIR)")
    return os.path.abspath(path)


def _one_line(err: BaseException) -> str:
    """The error and its cause on one line (Hydra puts the reason a value was refused in the cause)."""
    text = "; ".join(line.strip() for line in str(err).strip().splitlines() if line.strip())
    cause = err.__cause__
    if cause is not None and str(cause).strip():
        text += f": {str(cause).strip().splitlines()[0]}"
    return text


def hydra_overrides(overrides: list[str]) -> list[str]:
    """Command-line overrides as Hydra must see them.

    ``env`` is an open node whose schema is the task's dataclass, checked in ``build_env_cfg``: its keys are
    force-added (``++``) so Hydra's struct mode does not reject them first. ``env.backend=warp`` names the backend
    (``env.backend.name=warp``).
    """
    out = []
    for override in overrides:
        key, sep, value = override.partition("=")
        if key == "env.backend" and sep:
            override = f"env.backend.name={value}"
        out.append(f"++{override}" if override.startswith("env.") else override)
    return out


def user_overrides(hydra_form: list[str]) -> list[str]:
    """The inverse of ``hydra_overrides`` for display and for handing on to a child process."""
    return [o.removeprefix("++") if o.startswith("++env.") else o for o in hydra_form]


def _read_yaml(source: str, relative: str) -> DictConfig:
    path = resources.files(CONFIG_MODULE).joinpath(relative) if source.startswith("pkg://") else Path(source, relative)
    node = OmegaConf.load(str(path))
    assert isinstance(node, DictConfig)
    return node


def pipeline_choices(source: str, hydra_task: str | None, overrides: list[str]) -> tuple[str | None, str | None]:
    """The runner and algorithm a composition will pick: ``train.yaml``'s, the task's ``override``s, the command line's.

    Read from the defaults lists without composing, so a mismatched pair is named before the schemas of the two
    would clash over keys. ``hydra_task=None``: a task config with no file (an Isaac Lab task's, in the ConfigStore).
    """
    choices: dict[str, str | None] = {"runner": None, "algorithm": None}
    for relative in ("train.yaml", *([f"task/{hydra_task}.yaml"] if hydra_task else [])):  # the task's wins
        for entry in _read_yaml(source, relative).get("defaults", []):
            if isinstance(entry, DictConfig):
                for key, value in entry.items():
                    group = str(key).removeprefix("override /")
                    if group in choices:
                        choices[group] = str(value)
    choices.update(command_line_pipeline(overrides))
    return choices["runner"], choices["algorithm"]


def command_line_pipeline(overrides: list[str]) -> dict[str, str]:
    """The ``runner=`` and ``algorithm=`` the overrides pick (the last of each)."""
    picked = {}
    for override in overrides:
        key, sep, value = override.partition("=")
        if sep and key in ("runner", "algorithm"):
            picked[key] = value
    return picked


def compose(
    task_id: str, overrides: list[str], config_name: str = "train", agent: str = tasks.DEFAULT_AGENT
) -> DictConfig:
    """Compose ``train.yaml`` for ``task_id`` (its agent entry point ``agent``) with ``overrides`` applied last.

    Isaac Lab's preset tokens among ``overrides`` are kept in the config as ``isaaclab_presets``.
    """
    register_schemas()
    source = config_source()
    presets, overrides = split_preset_tokens(overrides)
    hydra_task, task_overrides = task_config(task_id, agent, presets, overrides)
    overrides = [*task_overrides, *overrides]
    check_pipeline(*pipeline_choices(source, None if tasks.is_isaaclab_task(task_id) else hydra_task, overrides))
    try:
        init = (
            hydra.initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3", job_name="robolab")
            if source.startswith("pkg://")
            else hydra.initialize_config_dir(config_dir=source, version_base="1.3", job_name="robolab")
        )
        with init:
            cfg = hydra.compose(
                config_name=config_name,
                overrides=[f"task={hydra_task}", *hydra_overrides(overrides)],
                return_hydra_config=True,
            )
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"bad config override: {_one_line(err)}") from None
    with open_dict(cfg):
        del cfg["hydra"]
        cfg.isaaclab_presets = presets
    return cfg


def split_preset_tokens(overrides: list[str]) -> tuple[list[str], list[str]]:
    """(Isaac Lab's preset tokens, the other overrides)."""
    presets = [o for o in overrides if o.partition("=")[0].lstrip("-") in PRESET_TOKENS and "=" in o]
    return presets, [o for o in overrides if o not in presets]


def task_config(task_id: str, agent: str, presets: list[str], overrides: list[str]) -> tuple[str, list[str]]:
    """The Hydra task config of ``task_id``'s agent ``agent``, and the overrides that go before the user's.

    An embedded task's is a file under ``config/task``. An Isaac Lab task's is its rsl_rl agent config class,
    translated (``robolab.tasks.isaaclab.agent_cfg``) and stored in Hydra's ConfigStore.
    """
    if not tasks.is_isaaclab_task(task_id):
        if presets:
            raise ConfigError(
                f"{presets[0]}: {', '.join(PRESET_TOKENS)} select Isaac Lab presets; {task_id} is an embedded "
                "MuJoCo task (its physics: env.backend=auto|mujoco|warp)"
            )
        return tasks.hydra_task_name(task_id, agent), []
    from robolab.tasks.isaaclab.agent_cfg import store_task_config

    chosen = command_line_pipeline(overrides)
    return store_task_config(task_id, agent, presets, chosen.get("runner"), chosen.get("algorithm"))


def check_pipeline(runner: str | None, algorithm: str | None) -> None:
    if PIPELINES.get(runner or "") != algorithm:
        allowed = ", ".join(f"runner={r} algorithm={a}" for r, a in PIPELINES.items())
        raise ConfigError(f"runner={runner} does not work with algorithm={algorithm}; allowed pairs: {allowed}")


def build_env_cfg(task_id: str, env_overrides: DictConfig | dict):
    """The task's env dataclass with ``env.*`` overrides merged in (unknown keys and bad types are errors)."""
    base = OmegaConf.structured(tasks.load_env_cfg(task_id))
    try:
        return OmegaConf.to_object(OmegaConf.merge(base, env_overrides))
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None)
        where = f"env.{key}: " if key else ""
        raise ConfigError(f"bad env config: {where}{_one_line(err)}") from None


def agent_dict(cfg: DictConfig) -> dict:
    """The rsl_rl runner config as the plain dict rsl_rl expects, its ranges checked (``robolab.rl_cfg``)."""
    try:
        agent = OmegaConf.to_object(cfg.agent)
    except AgentConfigError as err:
        raise ConfigError(str(err)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"bad agent config: {_one_line(err)}") from None
    return dataclasses.asdict(agent) if dataclasses.is_dataclass(agent) else dict(agent)  # type: ignore[arg-type]


def to_yaml(obj) -> str:
    return OmegaConf.to_yaml(OmegaConf.structured(obj) if not isinstance(obj, (dict, DictConfig)) else obj)
