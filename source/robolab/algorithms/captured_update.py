"""PPO's minibatch step recorded once as a CUDA graph and replayed for every minibatch.

Without host reads (``device_lr``), the update of a feed-forward policy is bound by Python: a few hundred small
kernels per minibatch, launched one by one, take about as long at 4096 envs as at 16384. Replaying a graph launches
them all at once. The graph reads its minibatch through an index tensor it owns (copied in before each replay) from
the rollout storage's own tensors, which rsl_rl fills in place, except the advantages, which it computes anew each
update and which are copied into the graph's tensor once per update. So nothing it touches moves between replays: the
models' parameters, the gradients (allocated in the graph's pool during capture), the optimiser's state and the
learning rate are the same tensors every time. Module buffers that their owner replaces with a new tensor instead of
writing in place (rsl_rl's ``EmpiricalNormalization`` assigns a new ``_std`` at every statistics update) are written
back into the tensors the graph reads (``rebind_buffers``): a graph that read the replaced, freed tensor would
normalise with garbage. When anything else is replaced (a checkpoint loaded into the optimiser, a different rollout
layout), ``CapturedStep.matches`` says no, and the update runs eagerly once and then captures anew.

What is captured is ``PPO.minibatch_step`` itself, so the graph does what the eager step does, kernel for kernel
(``tests/test_ppo_update.py`` compares both, and both with rsl_rl's update, on a GPU).
"""

from __future__ import annotations

import torch
from tensordict import TensorDict

from robolab.cuda_capture import module_buffers, rebind_buffers, recording
from robolab.rsl_rl_api import RolloutStorage


def rollout_fields(storage) -> dict:
    """The flattened (steps x envs, ...) rollout tensors a feed-forward minibatch is gathered from."""
    return {
        "observations": storage.observations.flatten(0, 1),
        "actions": storage.actions.flatten(0, 1),
        "values": storage.values.flatten(0, 1),
        "returns": storage.returns.flatten(0, 1),
        "old_actions_log_prob": storage.actions_log_prob.flatten(0, 1),
        "advantages": storage.advantages.flatten(0, 1),
        "old_distribution_params": tuple(p.flatten(0, 1) for p in storage.distribution_params),
    }


def _layout(fields: dict) -> tuple:
    """Where and how the rollout's tensors lie (the advantages aside: the graph has its own copy)."""
    tensors = [t for k, v in fields.items() if k != "advantages" for t in (v if isinstance(v, tuple) else (v,))]
    leaves = [leaf for t in tensors for leaf in (t.values(True, True) if isinstance(t, TensorDict) else (t,))]
    return tuple((leaf.data_ptr(), tuple(leaf.shape)) for leaf in leaves)


def _state_tensors(alg) -> list[torch.Tensor]:
    """Every tensor the captured step reads or writes in place besides the rollout: parameters, optimiser state, lr."""
    tensors = [p for group in alg.optimizer.param_groups for p in group["params"]]
    tensors += [v for state in alg.optimizer.state.values() for v in state.values() if torch.is_tensor(v)]
    return [*tensors, alg._lr]


class CudaGraphError(ValueError):
    """``agent.algorithm.cuda_graph=true`` could not capture the update here: a setting to turn off, reported in one
    line like any bad setting."""


class CapturedStep:
    """``alg.minibatch_step`` as a CUDA graph over the rollout storage and a minibatch index of its own."""

    def __init__(self, alg, mini_batch_size: int) -> None:
        self.alg = alg
        self.rollout = rollout_fields(alg.storage)
        self.rollout["advantages"] = self.rollout["advantages"].clone()  # the one field the storage replaces
        self.index = torch.zeros(mini_batch_size, dtype=torch.long, device=alg.device)
        self.buffers = module_buffers((alg.actor, alg.critic))
        self.losses: torch.Tensor | None = None
        self.identity = self._identity()
        self.graph = torch.cuda.CUDAGraph()
        self._warm_up_and_capture()

    def _warm_up_and_capture(self) -> None:
        # One eager step on the capture's stream first (torch's rule: lazy set-ups such as cuBLAS workspaces must not
        # happen during capture), undone in place afterwards: the models and the optimiser are as they were.
        alg, stream = self.alg, torch.cuda.Stream(self.alg.device)
        # The actor's distribution holds the autograd graph of the last eager minibatch, and with it the parameters'
        # gradient-accumulation nodes, which run on the stream they were made on (the default one): a capture that
        # reused them would make the default stream wait on the capturing one, which voids it. Set the distribution
        # anew without a graph, so the warm-up makes those nodes on the capture's stream.
        from robolab.algorithms.ppo import set_distribution

        with torch.no_grad():
            set_distribution(alg.actor, self._batch().observations)
        saved = [t.detach().clone() for t in _state_tensors(alg)]
        stream.wait_stream(torch.cuda.current_stream(alg.device))
        try:
            with torch.cuda.stream(stream):
                alg.minibatch_step(self._batch())
        finally:
            torch.cuda.current_stream(alg.device).wait_stream(stream)
            with torch.no_grad():
                for tensor, value in zip(_state_tensors(alg), saved):
                    tensor.copy_(value)
        # Gradients set to None make backward allocate them inside the graph's pool, where replays reuse them.
        alg.optimizer.zero_grad(set_to_none=True)
        with recording(self.graph, stream, "agent.algorithm.cuda_graph", "the PPO update", CudaGraphError):
            self.losses = torch.stack([loss.detach().float() for loss in alg.minibatch_step(self._batch())])

    def _batch(self) -> RolloutStorage.Batch:
        r, i = self.rollout, self.index
        observations: TensorDict = r["observations"][i]
        return RolloutStorage.Batch(
            observations=observations,
            actions=r["actions"][i],
            values=r["values"][i],
            advantages=r["advantages"][i],
            returns=r["returns"][i],
            old_actions_log_prob=r["old_actions_log_prob"][i],
            old_distribution_params=tuple(p[i] for p in r["old_distribution_params"]),
        )

    def _identity(self) -> tuple:
        return _layout(rollout_fields(self.alg.storage)), tuple(t.data_ptr() for t in _state_tensors(self.alg))

    def matches(self) -> bool:
        """Whether the graph still reads and writes the algorithm's current tensors and rollout storage (its buffers
        rebound first)."""
        return rebind_buffers(self.buffers) and self._identity() == self.identity

    def load_rollout(self) -> None:
        """Copy this update's advantages into the graph's tensor (the storage computes them anew every update)."""
        self.rollout["advantages"].copy_(self.alg.storage.advantages.flatten(0, 1))

    def step(self, minibatch_index: torch.Tensor) -> torch.Tensor:
        """One minibatch step on the given sample indices; returns its losses (a tensor the next replay overwrites)."""
        self.index.copy_(minibatch_index)
        self.graph.replay()
        assert self.losses is not None
        return self.losses
