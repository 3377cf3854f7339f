"""PPO with adversarial motion priors, with the discriminator synchronised across ranks.

The source system's PPOAMP inherits PPO's gradient reduction and broadcast, so each rank trains its own
discriminator and they drift apart. Here the discriminator and the AMP normaliser are in ``synced_modules``
(broadcast at the start of ``learn()``, checked by the replication check), the discriminator's gradients are
averaged across ranks after every backward, and the normaliser merges statistics across ranks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources

import torch
from tensordict import TensorDict

from robolab import distributed
from robolab.algorithms.ppo import PPO
from robolab.amp.discriminator import Discriminator, TransitionBuffer, gradient_penalty
from robolab.amp.motion import MotionLibrary, load_clip
from robolab.rl_cfg import AmpCfg
from robolab.rsl_rl_api import EmpiricalNormalization


def resolve_motion_file(path: str) -> str:
    """A path as given, or else a clip shipped in ``robolab/amp/data``."""
    if os.path.isfile(path):
        return path
    shipped = str(resources.files("robolab.amp") / "data" / path)
    return shipped if os.path.isfile(shipped) else path


@dataclass
class AmpState:
    """What the env defines about its AMP state; ``AMPRunner`` reads it from the env and hands it over."""

    terms: list[str]
    step_dt: float
    joint_names: list[str]
    foot_names: list[str]


class PPOAMP(PPO):
    """PPO with an adversarial motion prior: a discriminator on (s, s') AMP-state transitions, its replay buffer and
    normaliser, and a style reward mixed with the task reward; the discriminator is synced across ranks like the
    policy."""

    def __init__(self, actor, critic, storage, amp_cfg: dict, amp_state: dict, **ppo_kwargs):
        super().__init__(actor, critic, storage, **ppo_kwargs)
        cfg = AmpCfg(**amp_cfg)
        state = AmpState(**amp_state)
        clips = [load_clip(resolve_motion_file(f), state.joint_names, state.foot_names) for f in cfg.motion_files]
        self.motion = MotionLibrary(clips, state.terms, device=self.device)
        dim = self.motion.feature_dim
        self.amp_cfg = cfg
        self.step_dt = state.step_dt
        self.discriminator = Discriminator(dim, cfg.hidden_dims, cfg.activation, cfg.loss_type).to(self.device)
        self.amp_normalizer = EmpiricalNormalization(dim).to(self.device)
        self.disc_optimizer = torch.optim.Adam(
            self.discriminator.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay
        )
        self.replay = TransitionBuffer(dim, cfg.replay_size, self.device)
        self._amp_prev: torch.Tensor | None = None

    # --- synchronisation -------------------------------------------------------------------------------
    def synced_modules(self) -> dict[str, torch.nn.Module]:
        return {**super().synced_modules(), "discriminator": self.discriminator, "amp_normalizer": self.amp_normalizer}

    def synced_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {**super().synced_optimizers(), "disc_optimizer": self.disc_optimizer}

    def reduce_discriminator_gradients(self) -> None:
        if self.is_multi_gpu:
            distributed.average_gradients(self.discriminator.parameters(), self.sync_bucket_mb)

    # --- rollout -------------------------------------------------------------------------------------------
    def act(self, obs: TensorDict) -> torch.Tensor:
        self._amp_prev = obs["amp"]
        return super().act(obs)

    def style_reward(self, s: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.discriminator.style_reward(self.amp_normalizer(s), self.amp_normalizer(s_next))

    def process_env_step(self, obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: dict) -> None:
        s, s_next = self._amp_prev, extras["amp_next"].to(self.device)
        assert s is not None, "process_env_step before act"
        style = self.style_reward(s, s_next)
        self.replay.insert(s, s_next)
        cfg = self.amp_cfg
        mixed = cfg.task_reward_weight * rewards + cfg.style_reward_weight * style * self.step_dt
        extras.setdefault("log", {})["AMP/style_reward"] = style.mean()
        super().process_env_step(obs, mixed, dones, extras)

    # --- update ----------------------------------------------------------------------------------------------
    def update(self) -> dict[str, float]:
        losses = super().update()
        losses.update(self.update_discriminator())
        return losses

    def update_discriminator(self) -> dict[str, float]:
        """``num_disc_updates`` steps of the discriminator; its losses are summed on the device and read once."""
        names = ("amp_discriminator", "amp_grad_penalty", "amp_d_expert", "amp_d_policy")
        totals = torch.zeros(len(names), device=self.device)
        cfg = self.amp_cfg
        for _ in range(cfg.num_disc_updates):
            policy_s, policy_next = self.replay.sample(cfg.batch_size)
            expert_s, expert_next = self.motion.sample_pairs(cfg.batch_size, self.step_dt)
            norm = self.amp_normalizer
            d_policy = self.discriminator(norm(policy_s), norm(policy_next))
            d_expert, penalty = gradient_penalty(self.discriminator, norm(expert_s), norm(expert_next))
            loss = self.discriminator.loss(d_expert, d_policy)
            self.disc_optimizer.zero_grad()
            (loss + cfg.grad_penalty_coef * penalty).backward()
            self.reduce_discriminator_gradients()
            torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), cfg.max_grad_norm)
            self.disc_optimizer.step()
            # Merged across ranks inside EmpiricalNormalization when a process group exists.
            self.amp_normalizer.update(torch.cat([policy_s, expert_s]))
            totals += torch.stack([v.detach().float() for v in (loss, penalty, d_expert.mean(), d_policy.mean())])
        return dict(zip(names, (totals / cfg.num_disc_updates).tolist()))

    # --- state ------------------------------------------------------------------------------------------------
    def train_mode(self) -> None:
        super().train_mode()
        self.discriminator.train()
        self.amp_normalizer.train()

    def eval_mode(self) -> None:
        super().eval_mode()
        self.discriminator.eval()
        self.amp_normalizer.eval()

    def save(self) -> dict:
        saved = super().save()
        saved["discriminator_state_dict"] = self.discriminator.state_dict()
        saved["amp_normalizer_state_dict"] = self.amp_normalizer.state_dict()
        saved["disc_optimizer_state_dict"] = self.disc_optimizer.state_dict()
        return saved

    def load(self, loaded_dict: dict, load_cfg: dict | None, strict: bool) -> bool:
        iteration = super().load(loaded_dict, load_cfg, strict)
        if "discriminator_state_dict" in loaded_dict and (load_cfg is None or load_cfg.get("discriminator", True)):
            self.discriminator.load_state_dict(loaded_dict["discriminator_state_dict"], strict=strict)
            self.amp_normalizer.load_state_dict(loaded_dict["amp_normalizer_state_dict"], strict=strict)
            self.disc_optimizer.load_state_dict(loaded_dict["disc_optimizer_state_dict"])
        return iteration
