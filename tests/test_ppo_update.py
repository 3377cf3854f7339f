"""robolab's sync-free ``PPO.update`` against rsl_rl's own, on the same data and seed.

robolab overrides the update whole (the learning rate a device tensor, losses read once), so these tests hold it to
rsl_rl's result: the same parameters to float tolerance after three updates, for every schedule, loss option,
optimiser, recurrent models, mixed precision and the symmetry and RND extensions. ``ROBOLAB_TEST_DEVICE=cuda`` runs
them on a GPU (``docs/benchmarks/h200_update.sh``), where the fused and capturable optimiser kernels are the ones
that differ from rsl_rl's, and where ``test_a_minibatch_step_reads_nothing_back_to_the_host`` can see a host read.
"""

from __future__ import annotations

import io
import os
import weakref

import pytest
import torch
from rsl_rl.algorithms import PPO as RslRlPPO
from rsl_rl.models import MLPModel, RNNModel
from rsl_rl.storage import RolloutStorage
from tensordict import TensorDict

from robolab.algorithms import PPO
from robolab.algorithms.device_lr import adapt_learning_rate, kernel_flags
from robolab.config import agent_dict, compose
from robolab.session import report_cuda_graphs

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")
ENVS, STEPS, OBS, ACT = 16, 8, 6, 4
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


@pytest.fixture(autouse=True)
def no_tf32():
    """cuDNN's GRU rounds to TF32 by default on a GPU, where a last-bit difference would grow past any tolerance."""
    allowed = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = allowed


def mirror(env, obs=None, actions=None):
    """A toy mirror for rsl_rl's symmetry extension: observations negated, the first two actions swapped."""
    mirrored_obs = None if obs is None else torch.cat([obs, obs.apply(lambda x: -x)], dim=0)
    mirrored_actions = None if actions is None else torch.cat([actions, actions[..., [1, 0, 2, 3]]], dim=0)
    return mirrored_obs, mirrored_actions


def build(cls, recurrent: bool = False, **kwargs):
    """``cls`` (robolab's or rsl_rl's PPO) with models made from one seed, on ``DEVICE``."""
    x = torch.zeros(ENVS, OBS, device=DEVICE)
    obs = TensorDict({"policy": x, "critic": x}, batch_size=[ENVS], device=DEVICE)
    groups = {"actor": ["policy"], "critic": ["critic"]}
    torch.manual_seed(0)
    model, extra = (RNNModel, {"rnn_type": "gru", "rnn_hidden_dim": 8}) if recurrent else (MLPModel, {})
    dist = {"class_name": "GaussianDistribution", "init_std": 0.7}
    actor = model(obs, groups, "actor", ACT, hidden_dims=[32], obs_normalization=True, distribution_cfg=dist, **extra)
    critic = model(obs, groups, "critic", 1, hidden_dims=[32], obs_normalization=True, **extra)
    storage = RolloutStorage("rl", ENVS, STEPS, obs, [ACT], DEVICE)
    settings = {"num_learning_epochs": 3, "num_mini_batches": 4, "learning_rate": 1e-3, "device": DEVICE, **kwargs}
    alg = cls(actor.to(DEVICE), critic.to(DEVICE), storage, **settings)
    if cls is RslRlPPO and DEVICE == "cuda":
        # rsl_rl's reference gets the optimiser kernel robolab's runs on a GPU (fused or capturable, a float learning
        # rate): the comparison is of the two updates, not of two Adam kernels whose last bits differ.
        optimizer_class = type(alg.optimizer)
        flags = kernel_flags(optimizer_class, torch.device(DEVICE))
        alg.optimizer = optimizer_class(alg.optimizer.param_groups[0]["params"], lr=alg.learning_rate, **flags)
    return alg


def collect(alg, seed: int) -> None:
    """One rollout of fixed random observations, rewards and dones, as the runner collects it."""
    g = torch.Generator().manual_seed(seed)
    xs = (torch.randn(STEPS + 1, ENVS, OBS, generator=g) * 2.0).to(DEVICE)
    rewards = torch.randn(STEPS, ENVS, generator=g).to(DEVICE)
    dones = (torch.rand(STEPS, ENVS, generator=g) < 0.15).to(DEVICE)
    obs = [TensorDict({"policy": x, "critic": x}, batch_size=[ENVS], device=DEVICE) for x in xs]
    torch.manual_seed(seed)  # the action noise
    with torch.inference_mode():
        for t in range(STEPS):
            alg.act(obs[t])
            alg.process_env_step(obs[t + 1], rewards[t], dones[t], {})
        alg.compute_returns(obs[STEPS])


def train(alg, updates: int = 3) -> list[dict[str, float]]:
    losses = []
    for k in range(updates):
        collect(alg, seed=10 + k)
        torch.manual_seed(100 + k)  # the same minibatch shuffle for both
        losses.append(alg.update())
    return losses


def assert_same_models(ours, theirs) -> None:
    for part in ("actor", "critic"):
        mine, reference = getattr(ours, part).state_dict(), getattr(theirs, part).state_dict()
        assert mine.keys() == reference.keys()
        for name, tensor in reference.items():
            torch.testing.assert_close(mine[name], tensor, **TOLERANCE, msg=lambda m, n=f"{part}.{name}": f"{n}: {m}")


CASES = {
    "adaptive": {},
    "fixed": {"schedule": "fixed"},
    "unclipped_value_loss": {"use_clipped_value_loss": False},
    "advantages_per_minibatch": {"normalize_advantage_per_mini_batch": True},
    "adamw": {"optimizer": "adamw"},
    "sgd": {"optimizer": "sgd", "learning_rate": 3e-3},
    "rmsprop": {"optimizer": "rmsprop"},
    "tight_kl": {"desired_kl": 1e-5},  # the rate shrinks, down to its floor of 1e-5
    "symmetry": {
        "symmetry_cfg": {
            "env": None,
            "data_augmentation_func": mirror,
            "use_data_augmentation": True,
            "use_mirror_loss": True,
            "mirror_loss_coeff": 0.3,
        }
    },
}


@pytest.mark.parametrize("case", CASES)
def test_three_updates_give_rsl_rls_parameters_losses_and_learning_rate(case):
    ours, theirs = build(PPO, **CASES[case]), build(RslRlPPO, **CASES[case])
    our_losses, their_losses = train(ours), train(theirs)
    assert_same_models(ours, theirs)
    for mine, reference in zip(our_losses, their_losses):
        assert mine.keys() == reference.keys()
        for key, value in reference.items():
            assert mine[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    assert ours.learning_rate == pytest.approx(theirs.learning_rate, rel=1e-5)
    if CASES[case].get("schedule") != "fixed":  # the schedule was exercised, not just carried
        assert theirs.learning_rate != CASES[case].get("learning_rate", 1e-3)


@pytest.mark.parametrize("recurrent", [False, True], ids=["mlp", "gru"])
def test_recurrent_models_and_mixed_precision_give_rsl_rls_parameters(recurrent):
    kwargs = {"use_mixed_precision": not recurrent}  # bf16 autocast on the feed-forward pair, GRUs in float32
    ours, theirs = build(PPO, recurrent, **kwargs), build(RslRlPPO, recurrent, **kwargs)
    train(ours), train(theirs)
    if DEVICE == "cuda" and not recurrent:
        # bf16 keeps 8 bits: a weight one float32 ulp apart (rsl_rl's learning rate is a double, robolab's a float)
        # can round to another bf16 product. On the CPU the two agree to 1e-5 all the same.
        for part in ("actor", "critic"):
            for name, tensor in getattr(theirs, part).state_dict().items():
                torch.testing.assert_close(getattr(ours, part).state_dict()[name], tensor, rtol=1e-2, atol=1e-4)
    else:
        assert_same_models(ours, theirs)


def test_rnd_gives_rsl_rls_parameters_and_losses():
    groups = {"actor": ["policy"], "critic": ["critic"], "rnd_state": ["policy"]}
    rnd = {"num_states": OBS, "obs_groups": groups, "num_outputs": 5, "predictor_hidden_dims": [16]}
    rnd |= {"target_hidden_dims": [16], "weight": 0.5, "state_normalization": True}
    ours, theirs = build(PPO, rnd_cfg=dict(rnd)), build(RslRlPPO, rnd_cfg=dict(rnd))
    our_losses, their_losses = train(ours, updates=2), train(theirs, updates=2)
    assert_same_models(ours, theirs)
    for part in ("predictor", "target"):
        for name, tensor in getattr(theirs.rnd, part).state_dict().items():
            torch.testing.assert_close(getattr(ours.rnd, part).state_dict()[name], tensor, **TOLERANCE)
    assert our_losses[-1]["rnd"] == pytest.approx(their_losses[-1]["rnd"], rel=1e-4)


@pytest.mark.parametrize("recurrent", [False, True], ids=["mlp", "gru"])
@pytest.mark.parametrize("std_type", ["scalar", "log"])
def test_act_draws_rsl_rls_actions_to_the_bit(recurrent, std_type):
    """robolab draws N(0, 1) * std + mean itself (torch.normal's host check of the scale is a GPU wait)."""
    actions = []
    for cls in (PPO, RslRlPPO):
        alg = build(cls, recurrent)
        alg.actor.distribution.std_type = std_type
        if std_type == "log":
            alg.actor.distribution.log_std_param = torch.nn.Parameter(torch.full((ACT,), -0.4, device=DEVICE))
        torch.manual_seed(4)
        xs = torch.randn(3, ENVS, OBS, device=DEVICE)
        with torch.inference_mode():
            drawn = [alg.act(TensorDict({"policy": x, "critic": x}, batch_size=[ENVS], device=DEVICE)) for x in xs]
        actions.append((torch.stack(drawn), alg.transition.actions_log_prob, alg.transition.distribution_params))
    (ours, our_log_prob, our_params), (theirs, their_log_prob, their_params) = actions
    assert torch.equal(ours, theirs) and torch.equal(our_log_prob, their_log_prob)
    assert all(torch.equal(a, b) for a, b in zip(our_params, their_params))
    assert ours.std() > 0.1  # actions were drawn, not the mean


@pytest.mark.parametrize("kl", [0.0, 0.001, 0.01, 0.03])
@pytest.mark.parametrize("lr", [1e-5, 1e-3, 9e-3])
def test_the_device_schedule_decides_as_rsl_rl_does(kl, lr):
    desired = 0.01
    expected = lr
    if kl > desired * 2.0:
        expected = max(1e-5, lr / 1.5)
    elif kl < desired / 2.0 and kl > 0.0:
        expected = min(1e-2, lr * 1.5)
    rate = torch.tensor(lr, device=DEVICE)
    adapt_learning_rate(rate, torch.tensor(kl, device=DEVICE), desired)
    assert float(rate) == pytest.approx(expected, rel=1e-6)


def test_the_optimiser_reads_the_schedules_tensor_through_save_and_load():
    alg = build(PPO)
    train(alg, updates=1)
    saved = {**alg.save(), "iter": 0}
    assert all(type(g["lr"]) is float for g in saved["optimizer_state_dict"]["param_groups"])  # rsl_rl's format
    fresh = build(PPO, learning_rate=5e-4)
    fresh.load(saved, None, strict=True)
    assert fresh.learning_rate == pytest.approx(alg.learning_rate, rel=1e-6)
    assert all(g["lr"] is fresh._lr for g in fresh.optimizer.param_groups)
    fresh.learning_rate = 2e-4  # what the schedule writes is what the optimiser reads
    assert float(fresh.optimizer.param_groups[0]["lr"]) == pytest.approx(2e-4)
    # A checkpoint of rsl_rl's own PPO loads the same way.
    theirs = build(RslRlPPO)
    train(theirs, updates=1)
    fresh.load({**theirs.save(), "iter": 0}, None, strict=True)
    assert fresh.learning_rate == pytest.approx(theirs.learning_rate, rel=1e-6)
    train(fresh, updates=1)  # and trains on


ON_GPU_ONLY = pytest.mark.skipif(DEVICE != "cuda", reason="a GPU's part: docs/benchmarks/h200_update.sh runs it there")


@ON_GPU_ONLY
@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "graph"])
def test_a_minibatch_step_reads_nothing_back_to_the_host(cuda_graph):
    alg = build(PPO, cuda_graph=cuda_graph)
    for seed in (1, 2):  # the first update makes the optimiser's state; the second captures the graph
        collect(alg, seed=seed)
        alg.update()
    collect(alg, seed=3)
    batches = list(alg.storage.mini_batch_generator(alg.num_mini_batches, alg.num_learning_epochs))
    totals = torch.zeros(3, device=DEVICE)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        if cuda_graph:
            assert alg.capturable()
            alg.captured_epochs(totals)
        else:
            for batch in batches:
                alg.minibatch_step(batch)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@ON_GPU_ONLY
@pytest.mark.parametrize("case", ["adaptive", "fixed", "advantages_per_minibatch", "adamw", "sgd", "rmsprop"])
def test_the_cuda_graph_update_gives_the_eager_updates_parameters_and_rsl_rls(case):
    graph, eager = build(PPO, cuda_graph=True, **CASES[case]), build(PPO, **CASES[case])
    theirs = build(RslRlPPO, **CASES[case])
    losses = [train(alg, updates=4) for alg in (graph, eager, theirs)]
    assert graph._captured is not None and eager._captured is None
    for part in ("actor", "critic"):  # the same kernels in the same order: the same numbers
        for name, tensor in getattr(eager, part).state_dict().items():
            torch.testing.assert_close(getattr(graph, part).state_dict()[name], tensor, rtol=1e-6, atol=1e-7)
    assert_same_models(graph, theirs)
    assert losses[0][-1] == pytest.approx(losses[2][-1], rel=1e-4, abs=1e-6)


@ON_GPU_ONLY
def test_a_loaded_checkpoint_is_trained_on_by_a_new_graph():
    """Loading replaces the optimiser's state tensors, which the old graph would go on writing: the graph is dropped,
    one eager update runs with the loaded state, and the next update captures a new graph. The checkpoint goes through
    a file's bytes, as a resume's does: ``save()``'s dict holds the saver's live optimiser tensors, and a load on the
    same device keeps them (``Tensor.to`` returns the tensor itself), so two algorithms loaded from one dict would
    train one state between them."""
    alg, reference = build(PPO, cuda_graph=True), build(PPO)
    train(alg, updates=2), train(reference, updates=2)
    assert alg._captured is not None
    first = weakref.ref(alg._captured)
    buffer = io.BytesIO()
    torch.save({**reference.save(), "iter": 1}, buffer)
    for algorithm in (alg, reference):
        buffer.seek(0)
        algorithm.load(torch.load(buffer, weights_only=False), None, strict=True)
        for k in range(2):
            collect(algorithm, seed=50 + k)
            torch.manual_seed(5 + k)
            algorithm.update()
    assert alg._captured is not None and alg._captured is not first()
    assert_same_models(alg, reference)


def test_the_update_graph_is_on_by_default_and_applies_only_on_a_gpu(capsys):
    agent = agent_dict(compose("RoboLab-Velocity-Flat-Go2-v0", []))
    assert agent["algorithm"]["cuda_graph"] is True
    assert build(PPO, cuda_graph=True).graph_supported() is (DEVICE == "cuda"), "the CPU runs the eager update"
    assert not build(PPO, cuda_graph=False).graph_supported()

    class Alg:
        def __init__(self, supported):
            self.graph_supported = lambda: supported

    class Runner:
        def __init__(self, supported):
            self.alg = Alg(supported)
            self.matmul_precision = "tf32"

    class Env:
        step_graph = object()

    report_cuda_graphs(Env(), Runner(True), "cpu")
    assert capsys.readouterr().out == "", "a CPU run has no graphs to report"
    report_cuda_graphs(Env(), Runner(False), "cuda:0")
    out = capsys.readouterr().out
    assert out == (
        "[robolab] CUDA graphs: env step on (env.cuda_graph), PPO update and inference off "
        "(agent.algorithm.cuda_graph); model matmuls tf32 (agent.matmul_precision)\n"
    )
    report_cuda_graphs(object(), Runner(True), "cuda", is_main=False)
    assert capsys.readouterr().out == "", "only the main rank prints"
