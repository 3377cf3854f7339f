"""How a training run is launched: ``train.py``'s flags as a dataclass, and the logger and video settings they imply.

Everything here is checked before any work (a bad flag or a missing logger package is a one-line error).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from dataclasses import dataclass, fields

from robolab import tasks
from robolab.config import ConfigError, quoted

DEFAULT_TASK = "RoboLab-Velocity-Flat-Go2-v0"
DEFAULT_LOG_ROOT = os.path.join("logs", "rsl_rl")  # where Isaac Lab's scripts and tools look
DEFAULT_AGENT = tasks.DEFAULT_AGENT

LOGGERS = ("tensorboard", "wandb", "neptune")
_LOGGER_ENV = {"neptune": ("NEPTUNE_API_TOKEN", "NEPTUNE_USERNAME")}  # what rsl_rl's Neptune writer reads
_LOG_WRITERS = {"wandb": ("WandbLogWriter", "wandb"), "neptune": ("NeptuneLogWriter", "neptune")}


@dataclass
class TrainOptions:
    """The launch flags of ``train.py`` (everything else is a Hydra override); Isaac Lab's names and meanings."""

    task: str = DEFAULT_TASK
    agent: str = DEFAULT_AGENT
    num_envs: int | None = None
    max_iterations: int | None = None
    seed: int | None = None
    device: str | None = None
    distributed: bool = False
    log_root: str = DEFAULT_LOG_ROOT
    experiment_name: str | None = None
    run_name: str | None = None
    resume: str | None = None
    load_run: str | None = None
    checkpoint: str | None = None
    logger: str | None = None
    log_project_name: str | None = None
    video: bool = False
    video_length: int = 200
    video_interval: int = 2000
    export_io_descriptors: bool = False
    check_replication_every: int | None = None
    teacher_checkpoint: str | None = None
    init_policy: str | None = None
    isaaclab_launcher: dict = dataclasses.field(default_factory=dict)
    """Isaac Lab tasks: the launcher arguments (``--headless``, ``--enable_cameras``, ``--visualizer``, ...)."""

    @classmethod
    def from_namespace(cls, args) -> TrainOptions:
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)})

    def overrides(self) -> list[str]:
        """The flags that are config values, as Hydra overrides (they win over the task's defaults)."""
        for name in ("num_envs", "max_iterations", "video_length", "video_interval"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"--{name}={value}: must be a positive integer")
        if self.seed is not None and not -1 <= self.seed <= 2**62:
            raise ConfigError(f"--seed={self.seed}: must be in [0, 2**62], or -1 for a random seed")
        if self.logger is not None and self.logger not in LOGGERS:
            raise ConfigError(f"--logger={self.logger!r}: allowed: {', '.join(LOGGERS)}")
        flags = {
            "env.num_envs": self.num_envs,
            "seed": self.seed,
            "agent.experiment_name": self.experiment_name,
            "agent.run_name": self.run_name,
            "distributed.check_replication_every": self.check_replication_every,
        }
        # Names go through quoted(): a unicode or number-like name is passed as the text it is.
        given = {key: value for key, value in flags.items() if value is not None}
        return [f"{key}={quoted(value) if isinstance(value, str) else value}" for key, value in given.items()]


def log_writer_cfg(logger, project: str | None, experiment: str):
    """rsl_rl's ``logger`` entry for ``--logger``/``agent.logger``: ``tensorboard``, or the wandb/neptune writer dict
    (project: ``--log_project_name``, else the experiment name). A missing package is a one-line error now, not
    after the env is built."""
    if isinstance(logger, dict):
        name = {"WandbLogWriter": "wandb", "NeptuneLogWriter": "neptune"}.get(str(logger.get("class_name")))
        if name is not None:
            _require_logger_package(name)
        return logger
    if logger in (None, "tensorboard"):
        return "tensorboard"
    if logger not in _LOG_WRITERS:
        raise ConfigError(f"agent.logger={logger!r}: allowed: {', '.join(LOGGERS)}, or a writer dict with class_name")
    writer, package = _LOG_WRITERS[logger]
    _require_logger_package(package)
    return {"class_name": writer, "project_name": project or experiment}


def _require_logger_package(package: str) -> None:
    if importlib.util.find_spec(package) is None:
        raise ConfigError(
            f"--logger {package}: the {package} package is not installed (pip install 'robolab[{package}]')"
        )
    missing = [v for v in _LOGGER_ENV.get(package, ()) if not os.environ.get(v)]
    if missing:  # rsl_rl's writer would raise only once training starts
        raise ConfigError(f"--logger {package}: set {' and '.join(missing)} (NEPTUNE_MODE=offline logs locally)")


@dataclass
class VideoOptions:
    """Where and how often a training run records video of env 0."""

    directory: str
    length: int
    interval: int
