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
from torch import nn

from robolab import distributed
from robolab.algorithms.captured_act import CapturedAct
from robolab.algorithms.captured_update import CapturedStep
from robolab.algorithms.device_lr import adapt_learning_rate, device_lr_optimizer
from robolab.algorithms.sync import DEFAULT_BUCKET_MB, SyncedAlgorithm
from robolab.rsl_rl_api import PPO as RslRlPPO
from robolab.rsl_rl_api import GaussianDistribution, unpad_trajectories


def set_distribution(model, obs: TensorDict, masks: torch.Tensor | None = None, hidden_state=None) -> None:
    """Set ``model``'s output distribution for ``obs`` as its forward with ``stochastic_output=True`` does, without
    drawing a sample (on a GPU ``torch.normal`` checks its scale on the host, a wait for the GPU)."""
    if masks is not None and not model.is_recurrent:
        obs = unpad_trajectories(obs, masks)
    model.distribution.update(model.mlp(model.get_latent(obs, masks, hidden_state)))


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
        cuda_graph: bool = False,
        **kwargs,
    ):
        super().__init__(actor, critic, storage, grad_reduce_bucket_mb=grad_reduce_bucket_mb, **kwargs)
        self.critic_warmup_updates = critic_warmup_updates
        """The first this many updates train the critic alone (``PpoCfg.critic_warmup_updates``)."""
        self.cuda_graph = cuda_graph
        """Replay the minibatch step as a CUDA graph where it can be (``capturable``; ``PpoCfg.cuda_graph``)."""
        self._captured: CapturedStep | None = None
        self._captured_act: CapturedAct | None = None
        self._trained_all = False
        self.updates_done = 0
        """Updates made by this run, a resumed one's included (``load`` sets it from the checkpoint's iteration)."""
        # The models as given: rsl_rl may later replace self.actor/self.critic with torch.compile wrappers, whose
        # state dicts carry different names; broadcasting and checks use these.
        self.models = {"actor": actor, "critic": critic}
        self.sync_bucket_mb = grad_reduce_bucket_mb
        # The learning rate lives on the device (see ``learning_rate``): the optimiser reads it there.
        self.optimizer = device_lr_optimizer(self.optimizer, self._lr)

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

    # --- the rollout --------------------------------------------------------------------------------------------
    def act(self, obs: TensorDict) -> torch.Tensor:
        """rsl_rl's ``act``, with a Gaussian policy's action drawn as ``N(0, 1) * std + mean``: what ``torch.normal``
        computes, from the same generator, to the bit, but without its check of the scale on the host, which on a GPU
        waits for every env step. Where the update's graph applies (``graph_supported``) the inference is a graph
        replay too (``CapturedAct``), drawing the same bits. Other distributions sample through rsl_rl."""
        if not isinstance(self.actor.distribution, GaussianDistribution):
            return super().act(obs)
        self.transition.hidden_states = (self.actor.get_hidden_state(), self.critic.get_hidden_state())
        captured = self._captured_act_for(obs)
        actions, values, log_prob, params = captured(obs) if captured is not None else self.act_outputs(obs)
        transition = self.transition
        transition.actions, transition.values, transition.actions_log_prob = actions, values, log_prob
        transition.distribution_params = params
        transition.observations = obs
        return actions

    def act_outputs(self, obs: TensorDict) -> tuple:
        """(action, value, log-probability, distribution parameters) of a Gaussian policy for ``obs``: what ``act``
        records, eagerly or inside its graph."""
        set_distribution(self.actor, obs)
        mean, std = self.actor.output_mean, self.actor.output_std
        actions = (torch.randn_like(mean) * std + mean).detach()
        values = self.critic(obs).detach()
        log_prob = self.actor.get_output_log_prob(actions).detach()
        return actions, values, log_prob, tuple(p.detach() for p in self.actor.output_distribution_params)

    def _captured_act_for(self, obs: TensorDict) -> CapturedAct | None:
        """The inference's graph for ``obs``, captured at the first call (and anew when the observations' layout or the
        models' tensors changed); None where graphs do not apply."""
        if (
            not self.graph_supported()
            or self.actor is not self.models["actor"]
            or self.critic is not self.models["critic"]
        ):
            return None  # (a torch.compile wrapper replaced a model)
        if self._captured_act is None or not self._captured_act.matches(obs):
            self._captured_act = CapturedAct(self, obs)
        return self._captured_act

    # --- the learning rate, a tensor on the device -------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The optimiser's learning rate (a host read: the runner logs it once per iteration)."""
        return float(self._lr)

    @learning_rate.setter
    def learning_rate(self, value: float | torch.Tensor) -> None:
        # rsl_rl's constructor sets it before the optimiser exists: the tensor is made then and only filled after.
        if "_lr" not in self.__dict__:
            self._lr = torch.tensor(float(value), dtype=torch.float32, device=self.device)
        else:
            self._lr.fill_(float(value))

    # --- the update ----------------------------------------------------------------------------------------------
    def update(self) -> dict[str, float]:
        """One PPO update; during the critic's warm-up the actor takes no gradient step and the adaptive learning rate
        (which would read the unchanged actor's zero KL as room to grow) is put back afterwards."""
        self.updates_done += 1
        if self.updates_done > self.critic_warmup_updates:
            losses = self.ppo_update()
            self._trained_all = True  # every parameter has stepped: the optimiser's state is complete
            return losses
        held = [p for p in self.models["actor"].parameters() if p.requires_grad]
        learning_rate = self._lr.clone()
        for param in held:
            param.requires_grad_(False)
        try:
            return self.ppo_update()
        finally:
            for param in held:
                param.requires_grad_(True)
            self._lr.copy_(learning_rate)

    def ppo_update(self) -> dict[str, float]:
        """rsl_rl's ``PPO.update``, step for step, without a host read inside the loop: the adaptive learning rate is
        decided on the device (``adapt_learning_rate``) and the losses are summed as tensors, read once at the end.
        ``tests/test_ppo_update.py`` holds it to rsl_rl's parameters."""
        names = ["value", "surrogate", "entropy"] + ["rnd"] * bool(self.rnd) + ["symmetry"] * bool(self.symmetry)
        totals = torch.zeros(len(names), device=self.device)
        if self.capturable():
            self.captured_epochs(totals)
        else:
            if self.actor.is_recurrent or self.critic.is_recurrent:
                generator = self.storage.recurrent_mini_batch_generator
            else:
                generator = self.storage.mini_batch_generator
            for batch in generator(self.num_mini_batches, self.num_learning_epochs):
                totals += torch.stack([loss.detach().float() for loss in self.minibatch_step(batch)])

        obs = self.storage.observations.flatten(0, 1)
        self.actor.update_normalization(obs)  # type: ignore[operator]
        self.critic.update_normalization(obs)  # type: ignore[operator]
        if self.rnd:
            self.rnd.update_normalization(obs)  # type: ignore[operator]
        self.storage.clear()
        means = (totals / (self.num_learning_epochs * self.num_mini_batches)).tolist()  # the update's one host read
        return dict(zip(names, means))

    def capturable(self) -> bool:
        """Whether this update can replay a CUDA graph: a GPU, feed-forward models, one rank, no symmetry, RND or
        mixed precision, the critic's warm-up over (it changes which parameters train) and the optimiser's state
        complete (made by one eager update of every parameter: capture must not create it)."""
        return (
            self.graph_supported()
            and self.updates_done > self.critic_warmup_updates
            and self._trained_all
            and self._graph_usable()
        )

    def graph_supported(self) -> bool:
        """Whether this run's updates are replayed as a CUDA graph once it can be captured (``cuda_graph``, a GPU,
        feed-forward models, one rank, no symmetry, RND or mixed precision)."""
        return (
            self.cuda_graph
            and torch.device(self.device).type == "cuda"
            and not (self.actor.is_recurrent or self.critic.is_recurrent)
            and not (self.symmetry or self.rnd or self.is_multi_gpu or self.use_mixed_precision)
        )

    def _graph_usable(self) -> bool:
        """False, with the graph dropped, when what the graph reads was replaced (a checkpoint loaded into the
        optimiser): the next graph is captured after an eager update with the new state, as the first one was."""
        if self._captured is None or self._captured.matches():
            return True
        self._captured, self._trained_all = None, False
        return False

    def captured_epochs(self, totals: torch.Tensor) -> None:
        """The update's epochs as graph replays, over the minibatches rsl_rl's ``mini_batch_generator`` would give
        (one shuffle of the rollout, drawn the same way, for every epoch)."""
        mini_batch_size = self.storage.num_envs * self.storage.num_transitions_per_env // self.num_mini_batches
        indices = torch.randperm(self.num_mini_batches * mini_batch_size, requires_grad=False, device=self.device)
        if self._captured is None:
            # A refused capture (CudaGraphError) changed nothing, since what is captured is not executed, but it leaves
            # torch's CUDA generator unusable for this process: the run stops, naming the setting that avoids it.
            self._captured = CapturedStep(self, mini_batch_size)
        self._captured.load_rollout()
        for _ in range(self.num_learning_epochs):
            for i in range(self.num_mini_batches):
                totals += self._captured.step(indices[i * mini_batch_size : (i + 1) * mini_batch_size])

    def minibatch_step(self, batch) -> list[torch.Tensor]:
        """One gradient step on one minibatch; returns its losses (value, surrogate, entropy[, rnd][, symmetry])."""
        original_batch_size = batch.observations.batch_size[0]
        if self.normalize_advantage_per_mini_batch:
            with torch.no_grad():
                batch.advantages = (batch.advantages - batch.advantages.mean()) / (batch.advantages.std() + 1e-8)
        if self.symmetry:
            self.symmetry.augment_batch(batch, original_batch_size)

        device_type = torch.device(self.device).type
        with torch.amp.autocast(device_type=device_type, enabled=self.use_mixed_precision, dtype=torch.bfloat16):
            # The batch's action distribution, without the action rsl_rl's forward would draw and throw away.
            set_distribution(self.actor, batch.observations, batch.masks, batch.hidden_states[0])
            actions_log_prob = self.actor.get_output_log_prob(batch.actions)  # type: ignore[arg-type]
            values = self.critic(batch.observations, masks=batch.masks, hidden_state=batch.hidden_states[1])
            # Only the original samples count for the KL and the entropy when symmetry augmented the batch.
            distribution_params = tuple(p[:original_batch_size] for p in self.actor.output_distribution_params)
            entropy = self.actor.output_entropy[:original_batch_size].mean()

            if self.desired_kl is not None and self.schedule == "adaptive":
                with torch.inference_mode():
                    kl_mean = self.actor.get_kl_divergence(batch.old_distribution_params, distribution_params).mean()  # type: ignore[arg-type]
                    if self.is_multi_gpu:
                        torch.distributed.all_reduce(kl_mean, op=torch.distributed.ReduceOp.SUM)
                        kl_mean /= self.gpu_world_size
                    adapt_learning_rate(self._lr, kl_mean, self.desired_kl)
                    if self.is_multi_gpu:  # as in rsl_rl, rank 0's decision holds on every rank
                        torch.distributed.broadcast(self._lr, src=0)

            advantages = torch.squeeze(batch.advantages)  # type: ignore[arg-type]
            ratio = torch.exp(actions_log_prob - torch.squeeze(batch.old_actions_log_prob))  # type: ignore[arg-type]
            clipped_ratio = torch.clamp(ratio, 1.0 - self.clip_param, 1.0 + self.clip_param)
            surrogate_loss = torch.max(-advantages * ratio, -advantages * clipped_ratio).mean()

            if self.use_clipped_value_loss:
                value_clipped = batch.values + (values - batch.values).clamp(-self.clip_param, self.clip_param)
                value_losses = (values - batch.returns).pow(2)
                value_losses_clipped = (value_clipped - batch.returns).pow(2)
                value_loss = torch.max(value_losses, value_losses_clipped).mean()
            else:
                value_loss = (batch.returns - values).pow(2).mean()

            loss = surrogate_loss + self.value_loss_coef * value_loss - self.entropy_coef * entropy
            losses = [value_loss, surrogate_loss, entropy]
            if self.rnd:
                rnd_loss = self.rnd.compute_loss(batch.observations[:original_batch_size])  # type: ignore[index]
                losses.append(rnd_loss)
            if self.symmetry:
                symmetry_loss = self.symmetry.compute_loss(self.actor, batch, original_batch_size)
                if self.symmetry.use_mirror_loss:
                    loss = loss + self.symmetry.mirror_loss_coeff * symmetry_loss
                losses.append(symmetry_loss)

        self.optimizer.zero_grad()
        loss.backward()
        if self.rnd:
            self.rnd.optimizer.zero_grad()
            rnd_loss.backward()
        if self.is_multi_gpu:
            self.reduce_parameters()
        nn.utils.clip_grad_norm_(self.actor.parameters(), self.max_grad_norm)
        nn.utils.clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)
        self.optimizer.step()
        if self.rnd:
            self.rnd.optimizer.step()
        return losses

    def load(self, loaded_dict: dict, load_cfg: dict | None, strict: bool) -> bool:
        resumed = super().load(loaded_dict, load_cfg, strict)
        # The loaded optimiser state is new tensors: the graph is dropped, and the next one captured after an eager
        # update with that state.
        self._captured, self._trained_all = None, False
        if resumed:  # one update per iteration: a critic warm-up that ended before the save stays ended
            self.updates_done = loaded_dict["iter"] + 1
        return resumed

    def compute_returns(self, obs: TensorDict) -> None:
        super().compute_returns(obs)
        if self.is_multi_gpu and not self.normalize_advantage_per_mini_batch:
            advantages = self.storage.returns - self.storage.values
            mean, std = distributed.global_mean_std(advantages)
            self.storage.advantages = (advantages - mean) / (std + 1e-8)
