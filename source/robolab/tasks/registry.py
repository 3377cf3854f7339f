"""Task ids -> (env config, agent config, kind), kept in gymnasium's registry like Isaac Lab's tasks.

robolab's tasks are registered with gymnasium; their kwargs name the env-config entry point (a dataclass factory),
the agent configs (a Hydra task config under ``config/task``, or an inline dict) and the task's kind
(``robolab.tasks.interface``: how the session builds, opens and records it). Isaac Lab tasks, Isaac Lab's own,
robolab's ``RoboLab-Isaac-*`` and those of any extension registered through the ``isaaclab.tasks`` entry point,
carry Isaac Lab's kwargs instead: their agent is the rsl_rl config class an ``*_cfg_entry_point`` names, translated
by ``robolab.tasks.isaaclab.agent_cfg``.

Task packages are discovered, not listed: every sub-package of ``robolab.tasks.velocity`` (one robot per folder),
the packages of installed distributions that declare a ``robolab.tasks`` entry point, and those named in
``$ROBOLAB_TASK_PACKAGES`` (comma-separated importable packages, for a package that is not installed).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import importlib.metadata
import importlib.util
import os
from typing import Any

import gymnasium as gym

PREFIX = "RoboLab-"
DEFAULT_AGENT = "rsl_rl_cfg_entry_point"
"""Isaac Lab's name for a task's rsl_rl agent config (``--agent`` picks another of the task's entry points)."""
ISAACLAB_TASKS_GROUP = "isaaclab.tasks"
"""The entry point group through which Isaac Lab's CLI finds the task packages of installed extensions."""
TASKS_GROUP = "robolab.tasks"
"""The entry point group of installed packages with robolab tasks (``robolab.tasks = mypkg.tasks``)."""
PACKAGES_VARIABLE = "ROBOLAB_TASK_PACKAGES"
VELOCITY_KIND = "robolab.tasks.interface:VelocityTask"
ISAACLAB_KIND = "robolab.tasks.interface:IsaacLabTask"


def register_task(
    task_id: str,
    env_cfg_entry_point: str,
    hydra_task: str | dict | None = None,
    description: str = "",
    entry_point: str = "robolab.envs:VelocityEnv",
    extra: dict | None = None,
    agents: dict[str, str | dict] | None = None,
    kind: str = VELOCITY_KIND,
) -> None:
    """Register ``task_id``; ``extra`` kwargs are for other frameworks (Isaac Lab's agent entry points).

    ``agents`` maps agent entry point names (``--agent``) to agent configs; ``hydra_task`` is the default one,
    ``rsl_rl_cfg_entry_point``. An agent config is the name of a Hydra task config (``config/task/<name>.yaml``) or
    an inline dict ``{"runner": "on_policy" | "amp" | "distillation", "agent": {...agent.* values}}``. ``kind``
    (``module:Class``, a ``robolab.tasks.interface.TaskKind``) says how a session builds and opens the task.
    An Isaac Lab task gives no agents (its agents are its ``*_cfg_entry_point`` classes in ``extra``) and
    ``kind=ISAACLAB_KIND``.
    """
    if task_id in gym.registry:
        return
    agents = {**({DEFAULT_AGENT: hydra_task} if hydra_task is not None else {}), **(agents or {})}
    gym.register(
        id=task_id,
        entry_point=entry_point,
        disable_env_checker=True,
        kwargs={
            "env_cfg_entry_point": env_cfg_entry_point,
            "description": description,
            "robolab_kind": kind,
            **({"robolab_agents": agents} if agents else {}),
            **(extra or {}),
        },
    )


def kind_of(task_id: str):
    """The task's ``TaskKind``: the one it was registered with, Isaac Lab's for a task robolab did not register."""
    spec_kind = task_kwargs(task_id).get("robolab_kind", ISAACLAB_KIND)
    return _instance(spec_kind)


@functools.cache
def _instance(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)()


def env_class(task_id: str) -> Any:
    """The env class a task's gymnasium entry point names (``module:Class``)."""
    entry = gym.spec(task_id).entry_point
    if callable(entry):
        return entry
    module, _, name = str(entry).partition(":")
    return getattr(importlib.import_module(module), name)


def load_task_packages() -> None:
    """Import the task packages of installed distributions (``robolab.tasks`` entry points) and of
    ``$ROBOLAB_TASK_PACKAGES`` (imports are cached: calling again costs nothing)."""
    for entry_point in importlib.metadata.entry_points(group=TASKS_GROUP):
        entry_point.load()
    for name in filter(None, (p.strip() for p in os.environ.get(PACKAGES_VARIABLE, "").split(","))):
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ValueError(f"${PACKAGES_VARIABLE}: cannot import the task package {name!r} ({err})") from None


def isaaclab_installed() -> bool:
    """Whether Isaac Lab and its tasks can be imported here."""
    return importlib.util.find_spec("isaaclab") is not None and importlib.util.find_spec("isaaclab_tasks") is not None


def load_isaaclab_tasks() -> None:
    """Register every task Isaac Lab's CLI knows: Isaac Lab's own packages and those of the installed extensions
    that declare an ``isaaclab.tasks`` entry point (imports are cached: calling again costs nothing)."""
    if not isaaclab_installed():
        return
    import isaaclab_tasks  # noqa: F401  (registers Isaac Lab's tasks)

    with contextlib.suppress(ImportError):
        import isaaclab_tasks_experimental  # noqa: F401
    for entry_point in importlib.metadata.entry_points(group=ISAACLAB_TASKS_GROUP):
        entry_point.load()


def _trainable(spec) -> bool:
    """robolab can train it: one of robolab's ids, or an Isaac Lab task with an env config."""
    return "robolab_agents" in spec.kwargs or "env_cfg_entry_point" in spec.kwargs


def list_tasks() -> list[str]:
    """robolab's task ids, the discovered packages' and, where Isaac Lab is installed, every Isaac Lab task id
    (robolab's first)."""
    load_task_packages()
    load_isaaclab_tasks()
    ids = [spec.id for spec in gym.registry.values() if _trainable(spec)]
    return sorted(ids, key=lambda i: (not i.startswith(PREFIX), i))


def task_kwargs(task_id: str) -> dict:
    """The registered entry points of a task, loading task packages or Isaac Lab's tasks when it is not known yet."""
    if task_id not in gym.registry:
        load_task_packages()  # a task of an installed or named package
    if task_id not in gym.registry and not task_id.startswith(PREFIX):
        load_isaaclab_tasks()  # an Isaac Lab id, or one of an installed extension's
    if task_id not in gym.registry or not _trainable(gym.spec(task_id)):
        known = list_tasks()
        close = difflib.get_close_matches(task_id, known, n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see --list_tasks"
        if not isaaclab_installed() and not task_id.startswith(PREFIX):
            hint += " (Isaac Lab task ids need Isaac Lab installed: README, 'Isaac Lab')"
        raise ValueError(f"unknown task {task_id!r}{hint}")
    return gym.spec(task_id).kwargs


def description(task_id: str) -> str:
    """A task's one-line description (Isaac Lab's tasks: the name of their env config)."""
    kwargs = task_kwargs(task_id)
    return kwargs.get("description") or f"Isaac Lab task ({kwargs['env_cfg_entry_point'].rsplit(':', 1)[-1]})"


def load_env_cfg(task_id: str):
    """A fresh env config instance for ``task_id``."""
    module_name, attr = task_kwargs(task_id)["env_cfg_entry_point"].split(":")
    return getattr(importlib.import_module(module_name), attr)()


def agent_config(task_id: str, agent: str = DEFAULT_AGENT) -> str | dict:
    """A robolab task's agent config of entry point ``agent``: a Hydra task config's name, or an inline dict."""
    agents = task_kwargs(task_id)["robolab_agents"]
    if agent not in agents:
        raise ValueError(f"--agent={agent!r}: {task_id} has the agent configs {', '.join(sorted(agents))}")
    return agents[agent]


def agent_entry_points(task_id: str) -> list[str]:
    """The names ``--agent`` takes for ``task_id``: Hydra task configs, or Isaac Lab's rsl_rl entry points."""
    kwargs = task_kwargs(task_id)
    if "robolab_agents" in kwargs:
        return sorted(kwargs["robolab_agents"])
    return sorted(k for k in kwargs if k.startswith("rsl_rl") and k.endswith("_cfg_entry_point") and kwargs[k])
