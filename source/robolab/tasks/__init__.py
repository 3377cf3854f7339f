"""Task registry. Importing this package registers robolab's tasks with gymnasium."""

from robolab.tasks import velocity  # noqa: F401  (registers the velocity tasks)
from robolab.tasks.registry import hydra_task_name, list_tasks, load_env_cfg, task_kwargs

__all__ = ["hydra_task_name", "list_tasks", "load_env_cfg", "task_kwargs"]
