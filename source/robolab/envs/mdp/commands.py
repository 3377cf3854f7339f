"""Command terms: classes ``func(env, **params)`` with a ``command`` tensor, ``reset(mask)`` and ``update()``."""

from __future__ import annotations

import math

import torch

from robolab.envs.math import heading, wrap_to_pi
from robolab.envs.terms import check_range


class UniformVelocityCommand:
    """A base velocity command (forward, lateral m/s; yaw rate rad/s), resampled every ``resampling_time_s`` and at
    each reset; a ``standing_fraction`` of the draws is all zeros. With ``heading_command`` the yaw rate steers
    towards a target heading drawn from ``heading`` (proportional gain ``heading_stiffness``, clipped to
    ``ang_vel_z``)."""

    def __init__(
        self,
        env,
        resampling_time_s: float = 10.0,
        lin_vel_x: tuple[float, float] = (-1.0, 1.0),
        lin_vel_y: tuple[float, float] = (-1.0, 1.0),
        ang_vel_z: tuple[float, float] = (-1.0, 1.0),
        standing_fraction: float = 0.02,
        heading_command: bool = False,
        heading: tuple[float, float] = (-math.pi, math.pi),
        heading_stiffness: float = 0.5,
    ):
        # On the device: a command curriculum (``command_ranges``) widens them without asking the GPU anything.
        self.ranges = {
            name: torch.tensor(check_range(name, value), device=env.device)
            for name, value in (("lin_vel_x", lin_vel_x), ("lin_vel_y", lin_vel_y), ("ang_vel_z", ang_vel_z))
        }
        self.heading_range = check_range("heading", heading)
        if not resampling_time_s > 0:
            raise ValueError(f"resampling_time_s={resampling_time_s}: must be > 0")
        if not 0.0 <= standing_fraction <= 1.0:
            raise ValueError(f"standing_fraction={standing_fraction}: must be in [0, 1]")
        if not heading_stiffness >= 0:
            raise ValueError(f"heading_stiffness={heading_stiffness}: must be >= 0 (a gain towards the heading)")
        self.env = env
        self.resampling_time_s, self.standing_fraction = resampling_time_s, standing_fraction
        self.heading_command, self.heading_stiffness = heading_command, heading_stiffness
        n, dev = env.num_envs, env.device
        self.command = torch.zeros(n, 3, device=dev)
        self.heading_target = torch.zeros(n, device=dev)
        self.timer = torch.zeros(n, device=dev)

    def reset(self, mask: torch.Tensor) -> None:
        """New commands for the envs in ``mask`` (drawn for every env, kept where ``mask``: no wait for the GPU)."""
        env, n = self.env, self.env.num_envs
        cmd = torch.stack([env.uniform(*self.ranges[k], n) for k in ("lin_vel_x", "lin_vel_y", "ang_vel_z")], dim=1)
        standing = torch.rand(n, generator=env.generator, device=env.device) < self.standing_fraction
        cmd.masked_fill_(standing[:, None], 0.0)
        self.command = torch.where(mask[:, None], cmd, self.command)
        self.heading_target = torch.where(mask, env.uniform(*self.heading_range, n), self.heading_target)
        self.timer.masked_fill_(mask, self.resampling_time_s)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The ranges as they are now (a curriculum may have widened them), for a checkpoint."""
        return {name: value.clone() for name, value in self.ranges.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Ranges saved by a run of any size: several ranks' saved together (a resume on another number of ranks)
        are averaged end by end."""
        for name, value in state.items():
            if name in self.ranges:
                self.ranges[name] = value.reshape(-1, 2).mean(dim=0).to(self.ranges[name])

    def update(self) -> None:
        """One control step: resample where the timer ran out; steer the yaw rate towards the target heading."""
        self.timer -= self.env.step_dt
        self.reset(self.timer <= 0)
        if self.heading_command:
            moving = self.command.abs().sum(dim=1) > 0  # standing envs keep a zero yaw rate
            error = wrap_to_pi(self.heading_target - heading(self.env.state.base_quat))
            low, high = self.ranges["ang_vel_z"]
            self.command[:, 2] = torch.where(
                moving, (self.heading_stiffness * error).clamp(low, high), self.command[:, 2]
            )
