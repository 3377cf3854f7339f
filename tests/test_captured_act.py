"""PPO's policy inference as a CUDA graph (``robolab.algorithms.captured_act``) against the eager ``act``.

A replay must draw the bits the eager call draws from the same generator state, follow the models as they train (the
normaliser's replaced ``_std`` included), hand out an action the next step does not overwrite, and read nothing back
to the host. On the CPU the graph does not apply and ``act`` is the eager one (what the rest of the suite trains
with); ``ROBOLAB_TEST_DEVICE=cuda`` runs the GPU's part (``docs/benchmarks/h200_graph.sh``, ``PART=tests``).
"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from robolab.algorithms import PPO
from test_ppo_update import DEVICE, ENVS, OBS, build, collect, train

ON_GPU_ONLY = pytest.mark.skipif(DEVICE != "cuda", reason="a GPU's part: docs/benchmarks/h200_graph.sh runs it there")


def observations(seed: int, steps: int) -> list[TensorDict]:
    g = torch.Generator().manual_seed(seed)
    xs = (torch.randn(steps, ENVS, OBS, generator=g) * 2.0).to(DEVICE)
    return [TensorDict({"policy": x, "critic": x}, batch_size=[ENVS], device=DEVICE) for x in xs]


def act_all(alg, obs: list[TensorDict], seed: int) -> list[tuple]:
    """Each step's (action, value, log-probability, distribution parameters), copied, from one noise seed."""
    torch.manual_seed(seed)
    recorded = []
    with torch.inference_mode():
        for o in obs:
            action = alg.act(o)
            t = alg.transition
            recorded.append(
                (action, t.values.clone(), t.actions_log_prob.clone(), tuple(p.clone() for p in t.distribution_params))
            )
    return recorded


def assert_same_steps(graph: list[tuple], eager: list[tuple]) -> None:
    for k, (ours, theirs) in enumerate(zip(graph, eager)):
        for name, a, b in zip(("action", "value", "log_prob"), ours[:3], theirs[:3]):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7, msg=lambda m, n=name, s=k: f"step {s} {n}: {m}")
        for a, b in zip(ours[3], theirs[3]):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_on_the_cpu_act_is_the_eager_one():
    alg = build(PPO, cuda_graph=True)
    act_all(alg, observations(1, 3), seed=2)
    assert (alg._captured_act is not None) is (DEVICE == "cuda")


@ON_GPU_ONLY
def test_replays_draw_the_eager_calls_bits():
    graph, eager = build(PPO, cuda_graph=True), build(PPO)
    obs = observations(1, 6)
    steps = [act_all(alg, obs, seed=3) for alg in (graph, eager)]
    assert graph._captured_act is not None and eager._captured_act is None
    assert_same_steps(*steps)
    actions = torch.stack([s[0] for s in steps[0]])
    assert (actions[1:] - actions[:-1]).abs().max() > 0.1  # every step drew anew


@ON_GPU_ONLY
def test_the_handed_action_is_the_callers_to_keep():
    alg = build(PPO, cuda_graph=True)
    obs = observations(2, 3)
    with torch.inference_mode():
        first = alg.act(obs[0])
        kept = first.clone()
        alg.act(obs[1]), alg.act(obs[2])
    assert torch.equal(first, kept)


@ON_GPU_ONLY
def test_the_graph_follows_the_models_through_updates():
    """Rollouts and updates alternate (the normaliser's ``_std`` is a new tensor after each update): the graph's
    rollouts, and so the models, stay the eager algorithm's."""
    graph, eager = build(PPO, cuda_graph=True), build(PPO)
    for alg in (graph, eager):
        train(alg, updates=3)
    steps = [act_all(alg, observations(9, 4), seed=11) for alg in (graph, eager)]
    assert_same_steps(*steps)
    for part in ("actor", "critic"):
        for name, tensor in getattr(eager, part).state_dict().items():
            torch.testing.assert_close(getattr(graph, part).state_dict()[name], tensor, rtol=1e-6, atol=1e-7)


@ON_GPU_ONLY
def test_a_replay_reads_nothing_back_to_the_host():
    alg = build(PPO, cuda_graph=True)
    collect(alg, seed=1)  # captures
    obs = observations(4, 3)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        with torch.inference_mode():
            for o in obs:
                alg.act(o)
    finally:
        torch.cuda.set_sync_debug_mode("default")
