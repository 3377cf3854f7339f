"""Isaac Lab tasks: Isaac Lab's manager-based velocity tasks with robolab's observation groups and runners.

Registered with gymnasium when Isaac Lab is installed (nothing here imports it until a task is built):
``RoboLab-Isaac-Velocity-{Flat,Rough}-{Go2,AnymalD,G1}``. Each id carries Isaac Lab's kwargs
(``env_cfg_entry_point``, ``rsl_rl_cfg_entry_point``), so ``isaaclab train --rl_library rsl_rl`` trains it,
and robolab's (``hydra_task``: the agent config under ``config/task/``), so ``scripts/train.py`` trains it with
robolab's PPO, AMP or distillation runners. Isaac Lab finds this module through the ``isaaclab.tasks`` entry
point in ``setup.py``.
"""

from __future__ import annotations

import importlib.util

from robolab.tasks.registry import register_task

ROBOTS = {
    # name: (Isaac Lab config package, prefix of its agent cfg classes); env cfgs are in env_cfgs.py
    "Go2": ("go2", "UnitreeGo2"),
    "AnymalD": ("anymal_d", "AnymalD"),
    "G1": ("g1", "G1"),
}
ISAACLAB_CONFIGS = "isaaclab_tasks.core.velocity.config"


def isaaclab_available() -> bool:
    return importlib.util.find_spec("isaaclab") is not None and importlib.util.find_spec("isaaclab_tasks") is not None


def register_isaaclab_tasks() -> None:
    for robot, (package, agent_prefix) in ROBOTS.items():
        for terrain in ("Flat", "Rough"):
            task_id = f"RoboLab-Isaac-Velocity-{terrain}-{robot}"
            register_task(
                task_id,
                env_cfg_entry_point=f"robolab.tasks.isaaclab.env_cfgs:{robot}{terrain}EnvCfg",
                hydra_task=f"isaac_{package}_{terrain.lower()}",
                description=f"Isaac Lab {terrain.lower()} velocity tracking, {robot} (robolab groups and runners)",
                entry_point="isaaclab.envs:ManagerBasedRLEnv",
                extra={
                    "rsl_rl_cfg_entry_point": f"{ISAACLAB_CONFIGS}.{package}.agents.rsl_rl_ppo_cfg:"
                    f"{agent_prefix}{terrain}PPORunnerCfg",
                    "framework": "isaaclab",
                },
            )


if isaaclab_available():
    register_isaaclab_tasks()
