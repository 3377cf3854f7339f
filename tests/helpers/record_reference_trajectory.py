"""Records the Go2 tasks' reference trajectories (tests/data/go2_reference_trajectories.npz).

Run once, from the code before the MDP became a table of declared terms (commit eadf0b4), so that
``tests/test_declared_terms.py`` can show the declared-terms MDP gives the same observations, rewards, dones,
time-outs and logged episode sums, step for step from the same seed:

    python tests/helpers/record_reference_trajectory.py tests/data/go2_reference_trajectories.npz

Two cases: the task's defaults, and one that exercises every event and option in a few steps (short episodes,
fast command resampling with a heading command, frequent pushes, falls, a 3-frame policy history, the AMP group).
The cases here use the old configuration spelling; the test writes the same settings in the new one and runs this
script's ``record`` on them.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

from robolab.envs import VelocityEnv
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg

STEPS = 60


def default_case() -> Go2FlatEnvCfg:
    cfg = Go2FlatEnvCfg(num_envs=16, seed=7)
    cfg.backend.num_threads = 1
    return cfg


def busy_case() -> Go2FlatEnvCfg:
    cfg = Go2FlatEnvCfg(num_envs=16, seed=11, episode_length_s=0.6, policy_history=3)
    cfg.amp_terms = ["joint_pos", "joint_vel", "base_lin_vel", "base_ang_vel", "foot_pos"]
    cfg.commands.resampling_time_s = 0.3
    cfg.commands.heading_command = True
    cfg.commands.heading = (-math.pi / 2, math.pi / 2)
    cfg.events.push_interval_s = (0.1, 0.3)
    cfg.terminations.min_base_height = 0.26  # some envs fall: terminations, not only time-outs
    cfg.backend.num_threads = 1
    return cfg


def record(cfg) -> dict[str, np.ndarray]:
    env = VelocityEnv(cfg)
    g = torch.Generator().manual_seed(cfg.seed + 1000)
    out: dict[str, list] = {}
    obs0 = env.get_observations()
    out.setdefault("obs0_policy", []).append(obs0["policy"].numpy())
    logs: dict[str, list] = {}
    for step in range(STEPS):
        actions = torch.randn(env.num_envs, env.num_actions, generator=g) * 0.6
        obs, rew, done, extras = env.step(actions)
        for group in obs.keys():  # noqa: SIM118 (a TensorDict)
            out.setdefault(f"obs_{group}", []).append(obs[group].numpy().copy())
        out.setdefault("rewards", []).append(rew.numpy().copy())
        out.setdefault("dones", []).append(done.numpy().copy())
        out.setdefault("time_outs", []).append(extras["time_outs"].numpy().copy())
        if "amp_next" in extras:
            out.setdefault("amp_next", []).append(extras["amp_next"].numpy().copy())
        for key, value in extras["log"].items():
            logs.setdefault(key, [float("nan")] * step).append(float(value))
    env.close()
    arrays = {k: np.stack(v) for k, v in out.items()}
    arrays["log_names"] = np.array(sorted(logs))
    arrays["log_values"] = np.array([logs[k] for k in sorted(logs)], dtype=np.float64)
    return arrays


def main(path: str) -> None:
    arrays = {}
    for name, make in (("default", default_case), ("busy", busy_case)):
        for key, value in record(make()).items():
            arrays[f"{name}/{key}"] = value
    np.savez_compressed(path, **arrays)
    print(f"wrote {path}: {sorted(arrays)}")


if __name__ == "__main__":
    main(sys.argv[1])
