"""Test helper: one PPO update on fixed data, split across however many ranks are running.

Usage: python ppo_equivalence.py OUT_FILE ALGORITHM [symmetry] [rank_local_advantages]   (ALGORITHM: robolab or rsl_rl)
Every rank builds the same models from one seed and the same global batch of 2 x 8 envs x 6 steps, keeps its
share of the envs, runs ``update()`` and rank 0 writes the resulting parameters and first-step gradients.
The two env halves get different reward scales so rank-local advantage normalisation would show. With
``symmetry``, rsl_rl's symmetry extension runs too (a toy mirror: data augmentation and the mirror loss), so each
rank's augmented minibatch must still add up to the big batch's. With ``rank_local_advantages``, robolab computes
its returns as rsl_rl does (each rank normalises its own advantages), so only the two ``update()``s differ.
"""

import sys

import torch
from tensordict import TensorDict

from robolab import distributed
from robolab.algorithms import PPO
from robolab.distributed import read_context
from robolab.rsl_rl_api import PPO as RslRlPPO  # rsl_rl's own classes, through the one module that imports them
from robolab.rsl_rl_api import MLPModel, RolloutStorage

TOTAL_ENVS, STEPS, OBS, ACT = 16, 6, 5, 3

out_file, which = sys.argv[1], sys.argv[2]
symmetric = "symmetry" in sys.argv[3:]
rank_local_advantages = "rank_local_advantages" in sys.argv[3:]
ctx = read_context()
distributed.initialize(ctx, "cpu")
share = TOTAL_ENVS // ctx.world_size
envs = slice(ctx.rank * share, (ctx.rank + 1) * share)

# The global data set, identical on every rank.
g = torch.Generator().manual_seed(123)
obs_all = torch.randn(STEPS + 1, TOTAL_ENVS, OBS, generator=g)
actions_all = torch.randn(STEPS, TOTAL_ENVS, ACT, generator=g)
rewards_all = torch.randn(STEPS, TOTAL_ENVS, generator=g)
rewards_all[:, TOTAL_ENVS // 2 :] = 5.0 * rewards_all[:, TOTAL_ENVS // 2 :] + 3.0
dones_all = torch.rand(STEPS, TOTAL_ENVS, generator=g) < 0.1


def obs_at(t):
    x = obs_all[t, envs]
    return TensorDict({"policy": x, "critic": x}, batch_size=[share])


def toy_mirror(env, obs=None, actions=None):
    """A mirror of the toy task: observations negated and reversed, actions' first two swapped."""
    mirrored_obs = None if obs is None else torch.cat([obs, obs.apply(lambda x: -x.flip(-1))], dim=0)
    mirrored_actions = None if actions is None else torch.cat([actions, actions[..., [1, 0, 2]]], dim=0)
    return mirrored_obs, mirrored_actions


symmetry_cfg = None
if symmetric:
    symmetry_cfg = {
        "env": None,
        "data_augmentation_func": toy_mirror,
        "use_data_augmentation": True,
        "use_mirror_loss": True,
        "mirror_loss_coeff": 0.5,
    }

torch.manual_seed(0)
groups = {"actor": ["policy"], "critic": ["critic"]}
actor = MLPModel(
    obs_at(0),
    groups,
    "actor",
    ACT,
    hidden_dims=[16],
    obs_normalization=True,
    distribution_cfg={"class_name": "GaussianDistribution", "init_std": 1.0},
)
critic = MLPModel(obs_at(0), groups, "critic", 1, hidden_dims=[16], obs_normalization=True)
storage = RolloutStorage("rl", share, STEPS, obs_at(0), [ACT], "cpu")
multi = (
    {"global_rank": ctx.rank, "local_rank": ctx.local_rank, "world_size": ctx.world_size}
    if ctx.is_distributed
    else None
)
alg_class = PPO if which == "robolab" else RslRlPPO
alg = alg_class(
    actor,
    critic,
    storage,
    num_learning_epochs=2,
    num_mini_batches=1,
    learning_rate=1e-3,
    schedule="adaptive",
    desired_kl=0.01,
    multi_gpu_cfg=multi,
    symmetry_cfg=symmetry_cfg,
)
if ctx.is_distributed:
    alg.broadcast_parameters()

for t in range(STEPS):
    obs = obs_at(t)
    tr = alg.transition
    tr.hidden_states = (None, None)
    tr.observations = obs
    tr.actions = actions_all[t, envs]
    alg.actor(obs, stochastic_output=True)
    tr.actions_log_prob = alg.actor.get_output_log_prob(tr.actions).detach()
    tr.distribution_params = tuple(p.detach() for p in alg.actor.output_distribution_params)
    tr.values = alg.critic(obs).detach()
    tr.rewards = rewards_all[t, envs].clone()
    tr.dones = dones_all[t, envs]
    alg.storage.add_transition(tr)
    tr.clear()
if rank_local_advantages:
    RslRlPPO.compute_returns(alg, obs_at(STEPS))
else:
    alg.compute_returns(obs_at(STEPS))

# Record the gradient of the first minibatch step as well as the parameters after the whole update.
first_grads = {}
original_step = alg.optimizer.step


def recording_step(*a, **k):
    if not first_grads:
        for name, p in list(alg.actor.named_parameters()) + list(alg.critic.named_parameters()):
            first_grads[name] = p.grad.detach().clone()
    return original_step(*a, **k)


alg.optimizer.step = recording_step
alg.update()
if ctx.rank == 0:
    params = {f"actor.{k}": v.clone() for k, v in alg.actor.state_dict().items()}
    params.update({f"critic.{k}": v.clone() for k, v in alg.critic.state_dict().items()})
    torch.save({"params": params, "grads": first_grads, "lr": alg.learning_rate}, out_file)
distributed.shutdown()
