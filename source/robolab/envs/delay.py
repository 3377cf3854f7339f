"""Per-env delays of a signal (actions on their way to the motors, an observation group on its way to the policy):
each env reads the value it was given ``delay[env]`` control steps ago, its delay drawn per episode."""

from __future__ import annotations

import torch


class DelayLine:
    """The last ``max_delay + 1`` values of a (num_envs, width) signal. ``restart(mask, delays)`` starts new
    episodes: their next value fills every slot (no value from the previous episode comes out), and from then on
    they read ``delays`` (ints in [0, max_delay]) steps back."""

    def __init__(self, num_envs: int, max_delay: int, device: torch.device | str):
        if max_delay < 0:
            raise ValueError(f"max_delay={max_delay}: must be >= 0")
        self.max_delay = max_delay
        self.delays = torch.zeros(num_envs, dtype=torch.long, device=device)
        self._restart = torch.ones(num_envs, dtype=torch.bool, device=device)
        self._values: torch.Tensor | None = None  # (num_envs, max_delay + 1, width), newest last

    def restart(self, mask: torch.Tensor, delays: torch.Tensor) -> None:
        self.delays = torch.where(mask, delays.to(self.delays), self.delays)
        self._restart = self._restart | mask

    def __call__(self, value: torch.Tensor) -> torch.Tensor:
        if self.max_delay == 0:
            return value
        fill = value[:, None].expand(-1, self.max_delay + 1, -1)
        if self._values is None:
            self._values = fill.clone()
        else:
            self._values = torch.cat([self._values[:, 1:], value[:, None]], dim=1)
            self._values = torch.where(self._restart[:, None, None], fill, self._values)
        self._restart = torch.zeros_like(self._restart)
        newest = self.max_delay
        index = (newest - self.delays)[:, None, None].expand(-1, 1, value.shape[1])
        return self._values.gather(1, index)[:, 0]
