"""A third kind of task: a user's own rsl_rl ``VecEnv`` (a point mass steered to the origin), with no MuJoCo.

It implements ``robolab.tasks.interface.TaskKind`` through the base class's defaults: its env config is a
dataclass (``env.*`` overrides checked against it), its env is built from that config, its agent config is inline
(stored in Hydra's ConfigStore, no YAML). ``tests/test_task_interface.py`` trains and plays it with robolab's runners.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict

from robolab.rsl_rl_api import VecEnv
from robolab.tasks.interface import TaskKind
from robolab.tasks.registry import register_task

TASK_ID = "Toy-PointMass-v0"


@dataclass
class PointMassEnvCfg:
    num_envs: int = 64
    seed: int = 0
    device: str = "cpu"
    episode_length_s: float = 2.0
    dt: float = 0.05
    max_speed: float = 1.0


class PointMassEnv(VecEnv):
    """Observations: position and velocity (policy and critic); actions: a 2-d velocity; reward: -distance."""

    def __init__(self, cfg: PointMassEnvCfg):
        if cfg.max_speed <= 0:
            raise ValueError(f"env.max_speed={cfg.max_speed}: must be > 0")
        self.cfg, self.num_envs, self.num_actions = cfg, cfg.num_envs, 2
        self.device, self.step_dt = torch.device(cfg.device), cfg.dt
        self.max_episode_length = round(cfg.episode_length_s / cfg.dt)
        self.generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        self.episode_length_buf = torch.zeros(cfg.num_envs, dtype=torch.long, device=self.device)
        self.pos = torch.zeros(cfg.num_envs, 2, device=self.device)
        self.vel = torch.zeros_like(self.pos)
        self._reset(torch.ones(cfg.num_envs, dtype=torch.bool, device=self.device))
        self.last_tracking_error = torch.zeros(cfg.num_envs, device=self.device)

    def _reset(self, mask: torch.Tensor) -> None:
        start = 2.0 * torch.rand(self.num_envs, 2, generator=self.generator, device=self.device) - 1.0
        self.pos = torch.where(mask[:, None], start, self.pos)
        self.vel = self.vel.masked_fill(mask[:, None], 0.0)
        self.episode_length_buf.masked_fill_(mask, 0)

    def get_observations(self) -> TensorDict:
        obs = torch.cat([self.pos, self.vel], dim=1)
        return TensorDict({"policy": obs, "critic": obs}, batch_size=[self.num_envs], device=self.device)

    def step(self, actions: torch.Tensor):
        self.vel = actions.clamp(-1.0, 1.0) * self.cfg.max_speed
        self.pos = self.pos + self.vel * self.cfg.dt
        distance = self.pos.norm(dim=1)
        self.last_tracking_error = distance
        self.episode_length_buf += 1
        time_out = self.episode_length_buf >= self.max_episode_length
        self._reset(time_out)
        return self.get_observations(), -distance, time_out.long(), {"time_outs": time_out, "log": {}}

    def close(self) -> None:
        return None


class PointMassTask(TaskKind):
    """Everything from ``TaskKind``'s defaults except video, which this env cannot render."""

    name = "point_mass"
    viewer = False
    eval_overrides = ()  # no noise or pushes to turn off

    def check_video(self) -> None:
        raise ValueError(f"--video: {TASK_ID} has no renderer")


AGENT = {
    "runner": "on_policy",
    "agent": {
        "experiment_name": "point_mass",
        "max_iterations": 20,
        "num_steps_per_env": 16,
        "actor": {"hidden_dims": [32, 32]},
        "critic": {"hidden_dims": [32, 32]},
    },
}

register_task(
    TASK_ID,
    env_cfg_entry_point=f"{__name__}:PointMassEnvCfg",
    agents={"rsl_rl_cfg_entry_point": AGENT},
    description="a point mass steered to the origin (a user's own VecEnv)",
    entry_point=f"{__name__}:PointMassEnv",
    kind=f"{__name__}:PointMassTask",
)
