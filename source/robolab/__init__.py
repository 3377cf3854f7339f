"""robolab: legged-robot locomotion with RSL-RL, distributed-first.

Importing the package registers its tasks with gymnasium (``robolab.tasks.list_tasks()``).
"""

__version__ = "0.9.1"

from robolab import tasks  # noqa: F401  (registers tasks)
