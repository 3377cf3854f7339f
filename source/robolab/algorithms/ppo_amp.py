"""PPO with adversarial motion priors, with the discriminator synchronised across ranks.

The source system's PPOAMP inherits PPO's gradient reduction and broadcast, so each rank trains its own
discriminator and they drift apart. Here the discriminator and the AMP normaliser are in ``synced_modules``
(broadcast at the start of ``learn()``, checked by the replication check), the discriminator's gradients are
averaged across ranks after every backward, and the normaliser merges statistics across ranks.
"""

from __future__ import annotations

import os

import torch
from rsl_rl.modules import EmpiricalNormalization
from tensordict import TensorDict

from robolab import distributed
from robolab.algorithms.ppo import PPO
from robolab.amp.discriminator import Discriminator, TransitionBuffer, gradient_penalty
from robolab.amp.motion import MotionLibrary, load_clip

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "amp", "data")


def resolve_motion_file(path: str) -> str:
    """A path as given, or else a clip shipped in ``robolab/amp/data``."""
    if os.path.isfile(path):
        return path
    shipped = os.path.join(DATA_DIR, path)
    return shipped if os.path.isfile(shipped) else path


class PPOAMP(PPO):
    def __init__(self, actor, critic, storage, amp_cfg: dict, **ppo_kwargs):
        super().__init__(actor, critic, storage, **ppo_kwargs)
        cfg = dict(amp_cfg)
        clips = [load_clip(resolve_motion_file(f), cfg["joint_names"], cfg["foot_names"]) for f in cfg["motion_files"]]
        self.motion = MotionLibrary(clips, cfg["terms"], device=self.device)
        dim = self.motion.feature_dim
        self.step_dt = float(cfg["step_dt"])
        self.discriminator = Discriminator(dim, cfg.get("hidden_dims", (1024, 512)), cfg.get("activation", "relu"),
                                           cfg.get("loss_type", "lsgan")).to(self.device)
        self.amp_normalizer = EmpiricalNormalization(dim).to(self.device)
        self.disc_optimizer = torch.optim.Adam(
            self.discriminator.parameters(), lr=cfg.get("learning_rate", 1e-4), weight_decay=cfg.get("weight_decay", 1e-4)
        )
        self.replay = TransitionBuffer(dim, int(cfg.get("replay_size", 100_000)), self.device)
        self.task_reward_weight = float(cfg.get("task_reward_weight", 1.0))
        self.style_reward_weight = float(cfg.get("style_reward_weight", 1.0))
        self.grad_penalty_coef = float(cfg.get("grad_penalty_coef", 5.0))
        self.num_disc_updates = int(cfg.get("num_disc_updates", 8))
        self.disc_batch_size = int(cfg.get("batch_size", 4096))
        self.disc_max_grad_norm = float(cfg.get("max_grad_norm", 1.0))
        self._amp_prev: torch.Tensor | None = None

    # --- synchronisation -------------------------------------------------------------------------------
    def synced_modules(self) -> dict[str, torch.nn.Module]:
        return {**super().synced_modules(), "discriminator": self.discriminator, "amp_normalizer": self.amp_normalizer}

    def synced_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {**super().synced_optimizers(), "disc_optimizer": self.disc_optimizer}

    def reduce_discriminator_gradients(self) -> None:
        if self.is_multi_gpu:
            distributed.average_gradients(self.discriminator.parameters(), self.grad_reduce_bucket_mb)

    # --- rollout -------------------------------------------------------------------------------------------
    def act(self, obs: TensorDict) -> torch.Tensor:
        self._amp_prev = obs["amp"]
        return super().act(obs)

    def style_reward(self, s: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.discriminator.style_reward(self.amp_normalizer(s), self.amp_normalizer(s_next))

    def process_env_step(self, obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: dict) -> None:
        s, s_next = self._amp_prev, extras["amp_next"].to(self.device)
        style = self.style_reward(s, s_next)
        self.replay.insert(s, s_next)
        mixed = self.task_reward_weight * rewards + self.style_reward_weight * style * self.step_dt
        extras.setdefault("log", {})["AMP/style_reward"] = style.mean()
        super().process_env_step(obs, mixed, dones, extras)

    # --- update ----------------------------------------------------------------------------------------------
    def update(self) -> dict[str, float]:
        losses = super().update()
        losses.update(self.update_discriminator())
        return losses

    def update_discriminator(self) -> dict[str, float]:
        totals = {"amp_discriminator": 0.0, "amp_grad_penalty": 0.0, "amp_d_expert": 0.0, "amp_d_policy": 0.0}
        for _ in range(self.num_disc_updates):
            policy_s, policy_next = self.replay.sample(self.disc_batch_size)
            expert_s, expert_next = self.motion.sample_pairs(self.disc_batch_size, self.step_dt)
            norm = self.amp_normalizer
            d_policy = self.discriminator(norm(policy_s), norm(policy_next))
            d_expert, penalty = gradient_penalty(self.discriminator, norm(expert_s), norm(expert_next))
            loss = self.discriminator.loss(d_expert, d_policy)
            self.disc_optimizer.zero_grad()
            (loss + self.grad_penalty_coef * penalty).backward()
            self.reduce_discriminator_gradients()
            torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), self.disc_max_grad_norm)
            self.disc_optimizer.step()
            # Merged across ranks inside EmpiricalNormalization when a process group exists.
            self.amp_normalizer.update(torch.cat([policy_s, expert_s]))
            for key, value in zip(totals, (loss, penalty, d_expert.mean(), d_policy.mean())):
                totals[key] += value.item() / self.num_disc_updates
        return totals

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
