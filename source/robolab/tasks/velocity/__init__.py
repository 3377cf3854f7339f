"""Velocity-tracking tasks, one robot per folder."""

from robolab.tasks.velocity import go2  # noqa: F401
