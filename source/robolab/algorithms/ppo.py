"""rsl_rl's PPO with the multi-rank gaps closed.

rsl_rl 5.5 already averages gradients in buckets, all-reduces the adaptive-LR KL (rank 0 decides and
broadcasts) and merges observation-normaliser statistics across ranks. What it leaves rank-local is the
advantage normalisation: each rank divides by its own mean and std, so N ranks x B samples would not equal
1 rank x N*B samples. ``compute_returns`` here normalises with the global statistics instead.

The set of modules kept identical across ranks is declared once (``synced_modules``); broadcasting,
gradient averaging and the replication check come from ``SyncedAlgorithm`` and read it.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict

from robolab import distributed
from robolab.algorithms.sync import DEFAULT_BUCKET_MB, SyncedAlgorithm
from robolab.rsl_rl_api import PPO as RslRlPPO


class PPO(SyncedAlgorithm, RslRlPPO):
    """rsl_rl's PPO with gradients averaged across ranks, advantages normalised over every rank's samples, and the
    models, optimiser and normalisers kept identical on every rank."""

    def __init__(
        self,
        actor,
        critic,
        storage,
        grad_reduce_bucket_mb: float = DEFAULT_BUCKET_MB,
        critic_warmup_updates: int = 0,
        **kwargs,
    ):
        super().__init__(actor, critic, storage, grad_reduce_bucket_mb=grad_reduce_bucket_mb, **kwargs)
        self.critic_warmup_updates = critic_warmup_updates
        """The first this many updates train the critic alone (``PpoCfg.critic_warmup_updates``)."""
        self.updates_done = 0
        """Updates made by this run, a resumed one's included (``load`` sets it from the checkpoint's iteration)."""
        # The models as given: rsl_rl may later replace self.actor/self.critic with torch.compile wrappers, whose
        # state dicts carry different names; broadcasting and checks use these.
        self.models = {"actor": actor, "critic": critic}
        self.sync_bucket_mb = grad_reduce_bucket_mb

    def synced_modules(self) -> dict[str, torch.nn.Module]:
        """Every module whose parameters and buffers must be identical on all ranks."""
        modules = dict(self.models)
        if self.rnd:
            modules["rnd_predictor"] = self.rnd.predictor
            modules["rnd_target"] = self.rnd.target
        return modules

    def synced_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizers = {"optimizer": self.optimizer}
        if self.rnd:
            optimizers["rnd_optimizer"] = self.rnd.optimizer
        return optimizers

    def update(self) -> dict[str, float]:
        """rsl_rl's update; during the critic's warm-up the actor takes no gradient step and the adaptive learning
        rate (which would read the unchanged actor's zero KL as room to grow) is put back afterwards."""
        self.updates_done += 1
        if self.updates_done > self.critic_warmup_updates:
            return super().update()
        actor, learning_rate = self.models["actor"], self.learning_rate
        held = [p for p in actor.parameters() if p.requires_grad]
        for param in held:
            param.requires_grad_(False)
        try:
            return super().update()
        finally:
            for param in held:
                param.requires_grad_(True)
            self.learning_rate = learning_rate
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate

    def load(self, loaded_dict: dict, load_cfg: dict | None, strict: bool) -> bool:
        resumed = super().load(loaded_dict, load_cfg, strict)
        if resumed:  # one update per iteration: a critic warm-up that ended before the save stays ended
            self.updates_done = loaded_dict["iter"] + 1
        return resumed

    def compute_returns(self, obs: TensorDict) -> None:
        super().compute_returns(obs)
        if self.is_multi_gpu and not self.normalize_advantage_per_mini_batch:
            advantages = self.storage.returns - self.storage.values
            mean, std = distributed.global_mean_std(advantages)
            self.storage.advantages = (advantages - mean) / (std + 1e-8)
