"""Isaac Lab tasks: Isaac Lab's manager-based velocity tasks with robolab's observation groups and runners.

Registered with gymnasium when Isaac Lab is installed (nothing here imports it until a task is built):
``RoboLab-Isaac-Velocity-{Flat,Rough}-{Go2,AnymalD,G1}``. Each id carries Isaac Lab's kwargs only
(``env_cfg_entry_point``, ``rsl_rl_cfg_entry_point``): ``isaaclab train --rl_library rsl_rl`` trains the agent
class of ``agents.py``, and ``scripts/train.py`` trains its translation with robolab's PPO, AMP or distillation
runners, as it does any Isaac Lab task. Isaac Lab finds this module through the ``isaaclab.tasks`` entry point in
``setup.py``.
"""

from __future__ import annotations

from robolab.tasks.registry import ISAACLAB_KIND, isaaclab_installed, register_task

ROBOTS = ("Go2", "AnymalD", "G1")  # env configs in env_cfgs.py, agents in agents.py


def register_isaaclab_tasks() -> None:
    """Register robolab's Isaac Lab tasks (``RoboLab-Isaac-Velocity-*``) with gymnasium."""
    for robot in ROBOTS:
        for terrain in ("Flat", "Rough"):
            register_task(
                f"RoboLab-Isaac-Velocity-{terrain}-{robot}",
                env_cfg_entry_point=f"robolab.tasks.isaaclab.env_cfgs:{robot}{terrain}EnvCfg",
                kind=ISAACLAB_KIND,
                description=f"Isaac Lab {terrain.lower()} velocity tracking, {robot} (robolab groups and runners)",
                entry_point="isaaclab.envs:ManagerBasedRLEnv",
                extra={
                    "rsl_rl_cfg_entry_point": f"robolab.tasks.isaaclab.agents:{robot}{terrain}PPORunnerCfg",
                    "default_agent": "rsl_rl",
                },
            )


if isaaclab_installed():
    register_isaaclab_tasks()
