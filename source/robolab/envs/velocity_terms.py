"""The velocity MDP's tables: what it rewards, what the policy and the critic observe, which gaits it scores.

Each table is the one place its terms are declared. The env computes, weights, sums and logs whatever the
tables list, in their order: adding a reward term is one ``RewardTerm`` here plus its weight in ``RewardsCfg``;
adding an observation term is one ``ObsTerm``. Term functions read the env's per-step quantities (``env.state``,
``env.commands``, ``env.actions`` ...) and call the pure functions of ``robolab.envs.mdp``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import torch

from robolab.envs import mdp

if TYPE_CHECKING:
    from robolab.envs.velocity_env import VelocityEnv


@dataclass(frozen=True)
class RewardTerm:
    name: str
    """Logged as ``Episode_Reward/<name>``."""
    weight: str
    """The field of ``RewardsCfg`` holding the term's weight (multiplied by the control dt, as in Isaac Lab)."""
    func: Callable[[VelocityEnv], torch.Tensor]
    """Unweighted value per env, (num_envs,)."""


@dataclass(frozen=True)
class ObsTerm:
    name: str
    func: Callable[[VelocityEnv], torch.Tensor]
    """Value per env, (num_envs, width)."""
    noise: str | None = None
    """The field of ``NoiseCfg`` holding the half-width of its uniform noise (policy group only); None: exact."""


def _torques(env: VelocityEnv) -> torch.Tensor:
    return torch.nan_to_num(env.backend.joint_torques)


REWARD_TERMS: tuple[RewardTerm, ...] = (
    RewardTerm(
        "track_lin_vel_xy",
        "track_lin_vel_xy",
        lambda env: mdp.track_lin_vel_xy_exp(env.commands, env.state.base_lin_vel, env.cfg.rewards.tracking_std),
    ),
    RewardTerm(
        "track_ang_vel_z",
        "track_ang_vel_z",
        lambda env: mdp.track_ang_vel_z_exp(env.commands, env.state.base_ang_vel, env.cfg.rewards.tracking_std),
    ),
    RewardTerm("lin_vel_z", "lin_vel_z", lambda env: mdp.lin_vel_z_l2(env.state.base_lin_vel)),
    RewardTerm("ang_vel_xy", "ang_vel_xy", lambda env: mdp.ang_vel_xy_l2(env.state.base_ang_vel)),
    RewardTerm("joint_torques", "joint_torques", lambda env: mdp.l2(_torques(env))),
    RewardTerm("joint_acc", "joint_acc", lambda env: mdp.l2((env.state.joint_vel - env.prev_joint_vel) / env.step_dt)),
    RewardTerm("action_rate", "action_rate", lambda env: mdp.l2(env.actions - env.last_actions)),
    RewardTerm(
        "feet_air_time",
        "feet_air_time",
        lambda env: mdp.feet_air_time(
            env.last_air_time, env.first_contact, env.commands, env.cfg.rewards.feet_air_time_threshold
        ),
    ),
    RewardTerm(
        "undesired_contacts",
        "undesired_contacts",
        lambda env: mdp.undesired_contacts(
            env.backend.contact_forces("undesired"), env.cfg.terminations.contact_force_threshold
        ),
    ),
    RewardTerm(
        "flat_orientation", "flat_orientation", lambda env: mdp.flat_orientation_l2(env.state.projected_gravity)
    ),
)

POLICY_TERMS: tuple[ObsTerm, ...] = (
    ObsTerm("base_lin_vel", lambda env: env.state.base_lin_vel, noise="base_lin_vel"),
    ObsTerm("base_ang_vel", lambda env: env.state.base_ang_vel, noise="base_ang_vel"),
    ObsTerm("projected_gravity", lambda env: env.state.projected_gravity, noise="projected_gravity"),
    ObsTerm("velocity_commands", lambda env: env.commands),
    ObsTerm("joint_pos", lambda env: env.state.joint_pos - env.default_joint_pos, noise="joint_pos"),
    ObsTerm("joint_vel", lambda env: env.state.joint_vel, noise="joint_vel"),
    ObsTerm("actions", lambda env: env.last_actions),
)
"""One frame of the ``policy`` group (noisy, optionally stacked in time); the ``critic`` starts with it, exact."""

PRIVILEGED_TERMS: tuple[ObsTerm, ...] = (
    ObsTerm("friction", lambda env: env.friction[:, None]),
    ObsTerm("added_base_mass", lambda env: env.added_base_mass[:, None]),
    ObsTerm("foot_contact", lambda env: env.foot_contact.float()),
)
"""What the ``critic`` (and a distillation ``teacher``) sees beyond the policy frame."""


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
