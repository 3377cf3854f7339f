"""Build an Isaac Lab task for robolab's runners: start the simulation, apply overrides, wrap for rsl_rl.

The wrapper is Isaac Lab's ``RslRlVecEnvWrapper`` plus the two things robolab's runners read from an env:
``step_dt`` and, for AMP, ``extras["amp_next"]`` and the AMP names in ``env.cfg``.
"""

from __future__ import annotations

import contextlib

import gymnasium as gym
import torch
from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper
from tensordict import TensorDict


class RoboLabVecEnv(RslRlVecEnvWrapper):
    @property
    def step_dt(self) -> float:
        return self.unwrapped.step_dt

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        obs, rewards, dones, extras = super().step(actions)
        if "amp" in obs.keys():  # noqa: SIM118 (a TensorDict: `in` alone is not a key lookup)
            # Isaac Lab resets inside step, so a terminated env's pre-reset state is gone: its last AMP pair
            # ends at the reset state (the embedded env hands the true pre-reset state).
            extras["amp_next"] = obs["amp"]
        return obs, rewards, dones, extras


def make_isaaclab_env(
    task_id: str, env_overrides: dict, device: str, seed: int, stack: contextlib.ExitStack
) -> RoboLabVecEnv:
    """The Isaac Lab env of ``task_id`` on ``device``, alive until ``stack`` closes (simulation included).

    ``env_overrides`` are ``env.*`` keys from the command line; ``num_envs`` goes to ``scene.num_envs``, the
    rest update Isaac Lab's config class (an unknown key is an error naming it).
    """
    from isaaclab.app import launch_simulation
    from isaaclab_tasks.utils import resolve_task_config

    # Isaac Lab's resolution picks the physics preset (Newton kitless here) and the task's defaults.
    env_cfg, _ = resolve_task_config(task_id, None, overrides=[])
    apply_env_overrides(env_cfg, env_overrides)
    env_cfg.sim.device = device
    env_cfg.seed = seed
    stack.enter_context(launch_simulation(env_cfg, {"headless": True, "device": device}))
    env = gym.make(task_id, cfg=env_cfg)
    stack.callback(env.close)
    return RoboLabVecEnv(env)


def apply_env_overrides(env_cfg, env_overrides: dict) -> None:
    """Merge ``env.*`` overrides into Isaac Lab's config class; ``num_envs`` means ``scene.num_envs``."""
    from isaaclab.utils.dict import update_class_from_dict

    from robolab.config import ConfigError

    overrides = {k: v for k, v in env_overrides.items() if k not in ("num_envs", "seed", "device")}
    try:
        update_class_from_dict(env_cfg, overrides)
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise ConfigError(f"bad env config: {str(err).strip().splitlines()[0]}") from None
    if env_overrides.get("num_envs") is not None:
        env_cfg.scene.num_envs = int(env_overrides["num_envs"])


def env_config_dict(env: RoboLabVecEnv) -> dict:
    """The env config as plain data for ``params/env.yaml`` (slices written as strings, as Isaac Lab does)."""
    from isaaclab.utils.dict import class_to_dict, replace_slices_with_strings

    return replace_slices_with_strings(class_to_dict(env.unwrapped.cfg))
