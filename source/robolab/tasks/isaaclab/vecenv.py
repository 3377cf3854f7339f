"""Build an Isaac Lab task for robolab's runners: start the simulation, apply overrides, wrap for rsl_rl.

The wrapper is Isaac Lab's ``RslRlVecEnvWrapper`` plus the two things robolab's runners read from an env:
``step_dt`` and, for AMP, ``extras["amp_next"]`` and the AMP names in ``env.cfg``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

import gymnasium as gym
import torch
from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper
from tensordict import TensorDict


class RoboLabVecEnv(RslRlVecEnvWrapper):
    """Isaac Lab's rsl_rl env wrapper with what robolab's runners read: the control step, and the next AMP state of
    each transition."""

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


@dataclass
class IsaacLabLaunch:
    """How Isaac Lab starts the simulation: its preset tokens and its launcher arguments, as ``isaaclab train``
    takes them (``physics=newton_mjwarp``, ``--headless``, ``--enable_cameras``, ``--visualizer``, ``--kit_args``,
    ...). ``launcher`` holds the launcher arguments by name; the device is robolab's (``--device``, rank)."""

    presets: list[str] = field(default_factory=list)
    launcher: dict = field(default_factory=dict)


def make_isaaclab_env(
    task_id: str,
    env_overrides: dict,
    device: str,
    seed: int,
    stack: contextlib.ExitStack,
    video=None,
    launch: IsaacLabLaunch | None = None,
    clip_actions: float | None = None,
) -> RoboLabVecEnv:
    """The Isaac Lab env of ``task_id`` on ``device``, alive until ``stack`` closes (simulation included).

    ``env_overrides`` are ``env.*`` keys from the command line; ``num_envs`` goes to ``scene.num_envs``, the
    rest update Isaac Lab's config class (an unknown key is an error naming it). ``video`` (directory, length,
    interval) sets up Isaac Lab's own recorder, as its ``--video`` flag does. ``clip_actions`` is the agent's
    (rsl_rl's wrapper clips to it).
    """
    from isaaclab.app import launch_simulation

    from robolab.tasks.isaaclab.agent_cfg import resolve

    launch = launch or IsaacLabLaunch()
    # Isaac Lab's resolution picks the physics preset (``physics=``, ``presets=``; Newton kitless by default).
    env_cfg, _ = resolve(task_id, None, launch.presets)
    apply_env_overrides(env_cfg, env_overrides)
    env_cfg.sim.device = device
    env_cfg.seed = seed
    launcher = {"headless": True, **launch.launcher, "device": device}
    if video is not None:
        configure_video(env_cfg, video)
        launcher["visualizer"] = launcher.get("visualizer") or [VIDEO_VISUALIZER]
    stack.enter_context(launch_simulation(env_cfg, launcher))
    env = gym.make(task_id, cfg=env_cfg)
    stack.callback(env.close)
    return RoboLabVecEnv(env, clip_actions=clip_actions)


# Kitless Isaac Lab records from Newton's OpenGL visualizer (Isaac Lab's default, Kit, needs Isaac Sim).
VIDEO_VISUALIZER = "newton"


def configure_video(env_cfg, video) -> None:
    """Isaac Lab's recorder (``apply_video_recording``, what its ``--video`` does) writing to ``video.directory``."""
    import argparse

    from isaaclab_rl.entrypoints.common import apply_video_recording

    from robolab.config import ConfigError

    args = argparse.Namespace(
        video=True, video_length=video.length, video_interval=video.interval, visualizer=[VIDEO_VISUALIZER]
    )
    try:
        # Isaac Lab writes to <log_dir>/videos/<subdir>: video.directory is <run>/videos/{train,play}
        run_dir, subdir = os.path.dirname(os.path.dirname(video.directory)), os.path.basename(video.directory)
        apply_video_recording(env_cfg, run_dir, args, subdir=subdir)
    except ValueError as err:
        raise ConfigError(f"--video: {' '.join(str(err).split())}") from None
    for recorder in env_cfg.video_recorders:
        recorder.output_dir = recorder.output_dir or video.directory


def apply_env_overrides(env_cfg, env_overrides: dict) -> None:
    """Merge ``env.*`` overrides into Isaac Lab's config class; ``num_envs`` means ``scene.num_envs``."""
    from isaaclab.utils.dict import update_class_from_dict

    from robolab.config import ConfigError
    from robolab.errors import first_line

    overrides = {k: v for k, v in env_overrides.items() if k not in ("num_envs", "seed", "device")}
    try:
        update_class_from_dict(env_cfg, overrides)
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise ConfigError(f"bad env config: {first_line(err)}") from None
    if env_overrides.get("num_envs") is not None:
        env_cfg.scene.num_envs = int(env_overrides["num_envs"])


def env_config_dict(env: RoboLabVecEnv) -> dict:
    """The env config as plain data for ``params/env.yaml`` (slices written as strings, as Isaac Lab does)."""
    from isaaclab.utils.dict import class_to_dict, replace_slices_with_strings

    return replace_slices_with_strings(class_to_dict(env.unwrapped.cfg))
