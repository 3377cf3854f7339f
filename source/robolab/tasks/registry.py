"""Task ids -> (env config, Hydra task config), kept in gymnasium's registry like Isaac Lab's tasks.

Each id is registered with gymnasium; its kwargs name the env-config entry point (a dataclass factory)
and the Hydra task config (``config/task/<name>.yaml``) that carries the task's agent settings.
"""

from __future__ import annotations

import difflib
import importlib

import gymnasium as gym

PREFIX = "RoboLab-"
DEFAULT_AGENT = "rsl_rl_cfg_entry_point"
"""Isaac Lab's name for a task's rsl_rl agent config (``--agent`` picks another of the task's entry points)."""


def register_task(
    task_id: str,
    env_cfg_entry_point: str,
    hydra_task: str,
    description: str,
    entry_point: str = "robolab.envs:VelocityEnv",
    extra: dict | None = None,
    agents: dict[str, str] | None = None,
) -> None:
    """Register ``task_id``; ``extra`` kwargs are for other frameworks (Isaac Lab's agent entry points).

    ``agents`` maps further agent entry point names (``--agent``) to Hydra task configs; the default one,
    ``rsl_rl_cfg_entry_point``, is ``hydra_task``.
    """
    if task_id in gym.registry:
        return
    gym.register(
        id=task_id,
        entry_point=entry_point,
        disable_env_checker=True,
        kwargs={
            "env_cfg_entry_point": env_cfg_entry_point,
            "hydra_task": hydra_task,
            "description": description,
            "robolab_agents": {DEFAULT_AGENT: hydra_task, **(agents or {})},
            **(extra or {}),
        },
    )


def is_isaaclab_task(task_id: str) -> bool:
    return task_kwargs(task_id).get("framework") == "isaaclab"


def list_tasks() -> list[str]:
    return sorted(task_id for task_id in gym.registry if task_id.startswith(PREFIX))


def task_kwargs(task_id: str) -> dict:
    if task_id not in gym.registry or not task_id.startswith(PREFIX):
        close = difflib.get_close_matches(task_id, list_tasks(), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known tasks: {', '.join(list_tasks())}"
        raise ValueError(f"unknown task {task_id!r}{hint}")
    return gym.spec(task_id).kwargs


def load_env_cfg(task_id: str):
    """A fresh env config instance for ``task_id``."""
    module_name, attr = task_kwargs(task_id)["env_cfg_entry_point"].split(":")
    return getattr(importlib.import_module(module_name), attr)()


def hydra_task_name(task_id: str, agent: str = DEFAULT_AGENT) -> str:
    """The Hydra task config of ``task_id``'s agent entry point ``agent``."""
    agents = task_kwargs(task_id)["robolab_agents"]
    if agent not in agents:
        raise ValueError(f"--agent={agent!r}: {task_id} has the agent configs {', '.join(sorted(agents))}")
    return agents[agent]


def agent_entry_points(task_id: str) -> list[str]:
    return sorted(task_kwargs(task_id)["robolab_agents"])
