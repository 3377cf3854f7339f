"""Issue 31 diagnostics on a GPU (JSON on stdout): how far a captured env step's trajectory goes from the eager one's,
next to how far two eager envs of the same seed go from each other (MuJoCo Warp's atomics need not sum in one order),
step by step, with the observation noise on and off."""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "source"))
from robolab.envs import VelocityEnv
from robolab.tasks.registry import load_env_cfg


def env(task, graph, corruption):
    cfg = load_env_cfg(task)
    cfg.num_envs, cfg.seed, cfg.device, cfg.cuda_graph, cfg.episode_length_s = 256, 4, "cuda", graph, 0.5
    cfg.backend.name = "warp"
    if not corruption:
        for group in cfg.observations.values():
            group.enable_corruption = False
    return VelocityEnv(cfg)


out = {}
for task in sys.argv[1:]:
    for corruption in (True, False):
        a, b, c = env(task, False, corruption), env(task, False, corruption), env(task, True, corruption)
        g = torch.Generator().manual_seed(11)
        rows = []
        for _ in range(40):
            actions = (0.5 * torch.randn(256, a.num_actions, generator=g)).cuda()
            oa, ob, oc = a.step(actions)[0], b.step(actions)[0], c.step(actions)[0]
            row = {}
            for k in oa.keys():  # noqa: SIM118 - a TensorDict's iteration walks its batch
                row[f"{k}_eager_eager"] = (oa[k] - ob[k]).abs().max().item()
                row[f"{k}_eager_graph"] = (oa[k] - oc[k]).abs().max().item()
                cols = (oa[k] - oc[k]).abs().amax(0)
                row[f"{k}_worst_columns"] = cols.topk(3).indices.tolist()
            rows.append(row)
        out[f"{task} corruption={corruption}"] = rows
print(json.dumps(out))
