"""robolab's ``Distillation.update`` (the behaviour loss read once per update) against rsl_rl's own, on the same data.

The override changes only where the loss is read, so the student must come out bit for bit as rsl_rl's: feed-forward
and recurrent students (truncated backpropagation through time, resets at dones), gradient clipping, both loss
types. ``ROBOLAB_TEST_DEVICE=cuda`` runs it on a GPU (``docs/benchmarks/h200_update.sh``).
"""

from __future__ import annotations

import os

import pytest
import torch
from rsl_rl.algorithms import Distillation as RslRlDistillation
from rsl_rl.models import MLPModel, RNNModel
from rsl_rl.storage import RolloutStorage
from tensordict import TensorDict

from robolab.algorithms import Distillation

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")
ENVS, STEPS, OBS, ACT = 12, 10, 5, 3


def build(cls, recurrent: bool, **kwargs):
    x = torch.zeros(ENVS, OBS, device=DEVICE)
    obs = TensorDict({"policy": x, "teacher": x}, batch_size=[ENVS], device=DEVICE)
    groups = {"student": ["policy"], "teacher": ["teacher"]}
    torch.manual_seed(0)
    dist = {"class_name": "GaussianDistribution", "init_std": 0.3}
    if recurrent:
        student = RNNModel(
            obs, groups, "student", ACT, hidden_dims=[16], rnn_type="gru", rnn_hidden_dim=8, distribution_cfg=dist
        )
    else:
        student = MLPModel(obs, groups, "student", ACT, hidden_dims=[16], obs_normalization=True, distribution_cfg=dist)
    teacher = MLPModel(obs, groups, "teacher", ACT, hidden_dims=[16])
    storage = RolloutStorage("distillation", ENVS, STEPS, obs, [ACT], DEVICE)
    settings = {"num_learning_epochs": 2, "gradient_length": 5, "learning_rate": 1e-3, "device": DEVICE, **kwargs}
    return cls(student.to(DEVICE), teacher.to(DEVICE), storage, **settings)


def train(alg, updates: int = 3) -> list[float]:
    losses = []
    for k in range(updates):
        g = torch.Generator().manual_seed(30 + k)
        xs = torch.randn(STEPS + 1, ENVS, OBS, generator=g).to(DEVICE)
        dones = (torch.rand(STEPS, ENVS, generator=g) < 0.2).to(DEVICE)
        torch.manual_seed(k)
        with torch.inference_mode():
            for t in range(STEPS):
                alg.act(TensorDict({"policy": xs[t], "teacher": xs[t]}, batch_size=[ENVS], device=DEVICE))
                nxt = TensorDict({"policy": xs[t + 1], "teacher": xs[t + 1]}, batch_size=[ENVS], device=DEVICE)
                alg.process_env_step(nxt, torch.zeros(ENVS, device=DEVICE), dones[t], {})
        losses.append(alg.update()["behavior"])
    return losses


@pytest.mark.parametrize(
    ("recurrent", "kwargs"),
    [(False, {}), (False, {"loss_type": "huber", "max_grad_norm": 0.5}), (True, {}), (True, {"max_grad_norm": 1.0})],
    ids=["mlp", "mlp_huber_clipped", "gru", "gru_clipped"],
)
def test_the_student_comes_out_as_rsl_rls(recurrent, kwargs):
    ours, theirs = build(Distillation, recurrent, **kwargs), build(RslRlDistillation, recurrent, **kwargs)
    our_losses, their_losses = train(ours), train(theirs)
    for name, tensor in theirs.student.state_dict().items():
        torch.testing.assert_close(ours.student.state_dict()[name], tensor, rtol=1e-6, atol=1e-7, msg=name)
    assert our_losses == pytest.approx(their_losses, rel=1e-5)
    assert our_losses[0] != our_losses[-1]  # the student learned: the comparison is of moving parameters
