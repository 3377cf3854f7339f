"""A capture that CUDA refuses, in a process of its own (a refused capture leaves torch's CUDA generator unusable in
the process that tried): ``python refused_capture.py env|update`` prints the error's type and message as JSON.

- ``env``: a Go2 on MuJoCo Warp with ``env.cuda_graph=true`` and a reward term that reads a value back to the host;
- ``update``: the test suite's small PPO with ``cuda_graph=true`` whose minibatch step reads its loss back.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def host_reading_reward(env):
    """A reward that waits for the GPU: ``float()`` of a device value, which a capture cannot record."""
    return torch.full((env.num_envs,), float(env.episode_length_buf.float().mean()), device=env.device)


def refuse_env() -> None:
    from robolab.envs import VelocityEnv
    from robolab.envs.terms import RewardTermCfg
    from robolab.tasks.registry import load_env_cfg

    cfg = load_env_cfg("RoboLab-Velocity-Flat-Go2-v0")
    cfg.num_envs, cfg.device, cfg.cuda_graph = 16, "cuda", True
    cfg.backend.name = "warp"
    cfg.rewards = {**cfg.rewards, "host_read": RewardTermCfg(func=host_reading_reward, weight=1.0)}
    env = VelocityEnv(cfg)
    for _ in range(4):  # two eager warm-up steps, then the capture
        env.step(torch.zeros(env.num_envs, env.num_actions, device="cuda"))


def refuse_update() -> None:
    import test_ppo_update as t
    from robolab.algorithms.ppo import PPO

    alg = build_host_reading(PPO, t)
    for seed in (1, 2):  # the first update makes the optimiser's state, the second captures
        t.collect(alg, seed=seed)
        alg.update()


def build_host_reading(cls, t):
    alg = t.build(cls, cuda_graph=True)
    step = alg.minibatch_step

    def reading(batch):
        losses = step(batch)
        float(losses[0])  # a host read inside the step
        return losses

    alg.minibatch_step = reading
    return alg


if __name__ == "__main__":
    try:
        {"env": refuse_env, "update": refuse_update}[sys.argv[1]]()
    except Exception as error:  # reported to the test, which checks it
        print(json.dumps({"type": type(error).__name__, "message": str(error)}))
    else:
        print(json.dumps({"type": None, "message": "nothing was refused"}))
