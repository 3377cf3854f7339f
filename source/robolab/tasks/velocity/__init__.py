"""Velocity-tracking tasks, one robot per folder: every sub-package here is imported (it registers its tasks), so
adding a robot adds a folder and edits nothing (docs/your_own_robot.md)."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if _module.ispkg:
        importlib.import_module(f"{__name__}.{_module.name}")
