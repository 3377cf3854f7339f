"""Task registry. Importing this package registers robolab's tasks with gymnasium."""

from robolab.tasks import isaaclab, velocity  # noqa: F401  (register the tasks; Isaac Lab's only when installed)
from robolab.tasks.registry import (
    DEFAULT_AGENT,
    agent_entry_points,
    description,
    hydra_task_name,
    is_isaaclab_task,
    isaaclab_installed,
    list_tasks,
    load_env_cfg,
    load_isaaclab_tasks,
    task_kwargs,
)

__all__ = [
    "DEFAULT_AGENT",
    "agent_entry_points",
    "description",
    "hydra_task_name",
    "is_isaaclab_task",
    "isaaclab_installed",
    "list_tasks",
    "load_env_cfg",
    "load_isaaclab_tasks",
    "task_kwargs",
]
