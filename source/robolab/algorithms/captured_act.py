"""PPO's policy inference during a rollout, recorded once as a CUDA graph and replayed at every env step.

At 4096 envs on an H200 the inference (normalisers, two MLPs, the Gaussian's draw, its log-probability) is a few
dozen small kernels per step, issued one by one from Python: about 1 ms of host time per step against microseconds
of GPU work, 24 ms of a 170 ms iteration (docs/performance.md). Replaying a graph issues them at once.

The graph reads the observation groups the two models read from tensors of its own (the step's observations are
copied in first) and writes the action, value, log-probability and distribution parameters into tensors of its own.
The action handed back is a copy, the caller's to keep (an env may hold the last action it was given); the rest go
into the algorithm's transition, which the rollout storage copies before the next step.

The Gaussian's draw is ``torch.randn_like`` on the default CUDA generator, which torch replays graph-safely: each
replay reads the generator's offset as it is and advances it as the eager call would, so a replay draws the bits the
eager ``act`` would draw from the same generator state. The warm-up before the capture draws too; the generator is put
back afterwards, so capturing costs no draw. ``tests/test_captured_act.py`` holds replays to eager calls on a GPU.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict

from robolab.cuda_capture import module_buffers, rebind_buffers, recording


class CapturedActError(ValueError):
    """``agent.algorithm.cuda_graph=true`` could not capture the policy's inference here (one line, as a bad
    setting)."""


def _layout(obs: TensorDict, groups: list[str]) -> tuple:
    return tuple((group, tuple(obs[group].shape), obs[group].dtype) for group in groups)


class CapturedAct:
    """``alg.act_outputs`` (the action, value, log-probability and distribution parameters for one step's observations)
    as a CUDA graph over observation tensors of its own."""

    def __init__(self, alg, obs: TensorDict) -> None:
        self.alg = alg
        self.groups = list(dict.fromkeys([*alg.actor.obs_groups, *alg.critic.obs_groups]))
        self.layout = _layout(obs, self.groups)
        self.inputs = TensorDict(
            {group: obs[group].clone() for group in self.groups}, batch_size=obs.batch_size, device=obs.device
        )
        self.buffers = module_buffers((alg.actor, alg.critic))
        self.parameters = self._parameters()
        self.graph = torch.cuda.CUDAGraph()
        self.outputs: tuple | None = None
        self._warm_up_and_capture()

    def _parameters(self) -> tuple[int, ...]:
        return tuple(p.data_ptr() for model in (self.alg.actor, self.alg.critic) for p in model.parameters())

    def _warm_up_and_capture(self) -> None:
        alg, device = self.alg, torch.device(self.alg.device)
        stream = torch.cuda.Stream(device)
        # One eager call on the capture's stream first (lazy set-ups such as cuBLAS workspaces must not happen during
        # capture); its draw is undone, so the first replay draws what the eager act would have.
        rng = torch.cuda.get_rng_state(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            alg.act_outputs(self.inputs)
        torch.cuda.current_stream(device).wait_stream(stream)
        torch.cuda.set_rng_state(rng, device)
        with recording(self.graph, stream, "agent.algorithm.cuda_graph", "the policy's inference", CapturedActError):
            self.outputs = alg.act_outputs(self.inputs)

    def matches(self, obs: TensorDict) -> bool:
        """Whether the graph can act on ``obs``: the same groups and shapes, the models' parameters the same tensors,
        and their buffers (rebound first, ``cuda_capture.rebind_buffers``) of the same shapes."""
        return (
            _layout(obs, self.groups) == self.layout
            and self._parameters() == self.parameters
            and rebind_buffers(self.buffers)
        )

    def __call__(self, obs: TensorDict) -> tuple:
        """(action, value, log-probability, distribution parameters) for ``obs``; the action is a copy, the others the
        graph's tensors, which the next call overwrites."""
        for group in self.groups:
            self.inputs[group].copy_(obs[group])
        self.graph.replay()
        assert self.outputs is not None
        actions, values, log_prob, params = self.outputs
        return actions.clone(), values, log_prob, params
