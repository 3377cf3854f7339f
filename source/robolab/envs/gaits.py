"""Gait patterns scored per step from foot contacts (``Gait/<name>_score``, sim2sim's gait columns)."""

from __future__ import annotations

from itertools import pairwise

import torch


class GaitScores:
    """Per-step gait patterns from foot contacts, one score per named pattern of ``VelocityEnvCfg.gaits``.

    A pattern is a list of foot groups: it holds when the feet of each group share their contact state and
    consecutive groups are in opposite states (a trot: ``[[FL, RR], [FR, RL]]``; a biped walk: ``[[L], [R]]``).
    All patterns are checked with one batch of tensor ops: every pattern becomes pairs of feet that must agree
    or differ, padded to one length.
    """

    def __init__(self, gaits: dict[str, list[list[str]]], feet: list[str], device: torch.device):
        self.names = tuple(gaits)
        rows = [self._pairs(name, groups, feet) for name, groups in gaits.items()]
        width = max((len(r) for r in rows), default=0)
        pad = [(0, 0, True, False)] * width
        table = torch.tensor([(r + pad)[:width] for r in rows] or [[]], dtype=torch.long, device=device)
        table = table.reshape(len(rows), width, 4)
        self._first, self._second = table[..., 0], table[..., 1]
        self._agree, self._valid = table[..., 2].bool(), table[..., 3].bool()

    @staticmethod
    def _pairs(name: str, groups: list[list[str]], feet: list[str]) -> list[tuple[int, int, bool, bool]]:
        unknown = [f for group in groups for f in group if f not in feet]
        if unknown or len(groups) < 2 or not all(groups):
            raise ValueError(
                f"env.gaits.{name}={groups}: needs two or more non-empty groups of feet from {feet} "
                "(env.gaits=null scores none)"
            )
        index = [[feet.index(f) for f in group] for group in groups]
        agree = [(g[0], other, True, True) for g in index for other in g[1:]]
        differ = [(a[0], b[0], False, True) for a, b in pairwise(index)]
        return agree + differ

    def __call__(self, contact: torch.Tensor) -> torch.Tensor:
        """(num_envs, patterns) bool: which patterns the contacts (num_envs, feet) show."""
        if not self.names:
            return contact.new_zeros((contact.shape[0], 0), dtype=torch.bool)
        same = contact[:, self._first] == contact[:, self._second]  # (N, patterns, pairs)
        holds = torch.where(self._agree, same, ~same) | ~self._valid
        return holds.all(dim=-1)
