"""Hydra composition of the training config, and its split into the env dataclass and the agent dict."""

from __future__ import annotations

import os
from pathlib import Path

import hydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from robolab import tasks

# Training pipelines: each runner config works with exactly one algorithm config.
PIPELINES = {"on_policy": "ppo", "amp": "ppo_amp", "distillation": "distillation"}


class ConfigError(ValueError):
    """A bad override or config value; the message is one line and names the offending key."""


def config_dir() -> str:
    """``config/`` of the robolab checkout (or ``$ROBOLAB_CONFIG_DIR``)."""
    path = os.environ.get("ROBOLAB_CONFIG_DIR") or str(Path(__file__).resolve().parents[2] / "config")
    if not os.path.isfile(os.path.join(path, "train.yaml")):
        raise ConfigError(f"config directory {path!r} has no train.yaml (set ROBOLAB_CONFIG_DIR)")
    return path


def _one_line(err: Exception) -> str:
    return "; ".join(line.strip() for line in str(err).strip().splitlines() if line.strip())


def compose(task_id: str, overrides: list[str], config_name: str = "train") -> DictConfig:
    """Compose ``config/<config_name>.yaml`` for ``task_id`` with command-line ``overrides`` applied last."""
    hydra_task = tasks.hydra_task_name(task_id)
    # `env` is an open node whose schema is the task's dataclass, checked in build_env_cfg; force-add its keys
    # here so Hydra's struct mode does not reject them first.
    overrides = [f"++{_backend_shorthand(o)}" if o.startswith("env.") else o for o in overrides]
    try:
        with hydra.initialize_config_dir(config_dir=config_dir(), version_base="1.3", job_name="robolab"):
            cfg = hydra.compose(
                config_name=config_name, overrides=[f"task={hydra_task}", *overrides], return_hydra_config=True
            )
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"bad config override: {_one_line(err)}") from None
    check_pipeline(cfg.hydra.runtime.choices.get("runner"), cfg.hydra.runtime.choices.get("algorithm"))
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _backend_shorthand(override: str) -> str:
    """``env.backend=mjx`` names the backend: it means ``env.backend.name=mjx``."""
    key, sep, value = override.partition("=")
    return f"env.backend.name={value}" if sep and key == "env.backend" else override


def check_pipeline(runner: str | None, algorithm: str | None) -> None:
    if PIPELINES.get(runner) != algorithm:
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
    """The rsl_rl runner config as the plain dict rsl_rl expects."""
    agent = OmegaConf.to_container(cfg.agent, resolve=True)
    assert isinstance(agent, dict)
    return agent


def to_yaml(obj) -> str:
    return OmegaConf.to_yaml(OmegaConf.structured(obj) if not isinstance(obj, (dict, DictConfig)) else obj)
