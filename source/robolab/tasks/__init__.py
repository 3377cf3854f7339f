"""Task registry. Importing this package registers robolab's tasks with gymnasium."""

from robolab.tasks import isaaclab, velocity  # noqa: F401  (register the tasks; Isaac Lab's only when installed)
from robolab.tasks.registry import hydra_task_name, is_isaaclab_task, list_tasks, load_env_cfg, task_kwargs

__all__ = ["hydra_task_name", "is_isaaclab_task", "list_tasks", "load_env_cfg", "task_kwargs"]
