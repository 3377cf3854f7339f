"""Task registry. Importing this package registers robolab's tasks with gymnasium."""

from robolab.tasks import isaaclab, velocity  # noqa: F401  (register the tasks; Isaac Lab's only when installed)
from robolab.tasks.registry import (
    DEFAULT_AGENT,
    agent_config,
    agent_entry_points,
    description,
    env_class,
    isaaclab_installed,
    kind_of,
    list_tasks,
    load_env_cfg,
    load_isaaclab_tasks,
    load_task_packages,
    task_kwargs,
)

__all__ = [
    "DEFAULT_AGENT",
    "agent_config",
    "agent_entry_points",
    "description",
    "env_class",
    "isaaclab_installed",
    "kind_of",
    "list_tasks",
    "load_env_cfg",
    "load_isaaclab_tasks",
    "load_task_packages",
    "task_kwargs",
]
