"""Published robot models with their own solver options, trained as robolab's task on each backend.

The models are gymnasium's MuJoCo assets (MIT licence, mesh-free), read from the installed gymnasium package that
robolab depends on, so nothing is copied or downloaded: its Ant (a quadruped: RK4 integrator, 0.01 s step, soft
contacts with a margin) and its Humanoid (a biped: PGS solver, RK4, fixed tendons). Each either trains on a backend
as on MuJoCo C, or is refused up front in one line naming the option the backend cannot simulate.
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch

from conftest import clean_env, run, train_cmd

ASSETS = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"


def robot_overrides(model: str) -> list[str]:
    """The name map of each model onto the velocity MDP, as ``env.*`` overrides."""
    if model == "ant":
        joints = [f"{part}_{leg}" for leg in range(1, 5) for part in ("hip", "ankle")]
        robot = {
            "mjcf_path": str(ASSETS / "ant.xml"), "base_body": "torso", "joint_names": joints,
            "foot_bodies": [f"aux_{leg}_body0" for leg in range(1, 5)],  # the lower legs, unnamed in the file
            "undesired_contact_bodies": [], "termination_contact_bodies": ["torso"],
            "default_joint_pos": [0.0, 1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 1.0], "init_base_height": 0.75,
            "stiffness": 20.0, "damping": 1.0, "torque_limits": [150.0] * 8,
        }  # fmt: skip
        # its torso weighs 0.33 kg: the Go2's added-mass range (-1, 3) kg would make it negative (refused)
        extra = [
            "env.terminations.base_height.params.min_height=0.2",
            "env.events.add_base_mass.params.mass_range=[-0.1,0.3]",
        ]
    else:
        joints = ["abdomen_z", "abdomen_y", "abdomen_x"]
        for side in ("right", "left"):
            joints += [f"{side}_hip_x", f"{side}_hip_z", f"{side}_hip_y", f"{side}_knee"]
        joints += [f"{side}_{j}" for side in ("right", "left") for j in ("shoulder1", "shoulder2", "elbow")]
        robot = {
            "mjcf_path": str(ASSETS / "humanoid.xml"), "base_body": "torso", "joint_names": joints,
            "foot_bodies": ["right_foot", "left_foot"], "undesired_contact_bodies": ["right_shin", "left_shin"],
            "termination_contact_bodies": ["torso"],
            "default_joint_pos": [-0.1 if "knee" in j else 0.0 for j in joints], "init_base_height": 1.4,
            "stiffness": 100.0, "damping": 5.0, "torque_limits": [100.0] * len(joints),
        }  # fmt: skip
        extra = [
            "env.terminations.base_height.params.min_height=0.8",
            "env.events.add_base_mass.params.mass_range=[-1.0,3.0]",
        ]
    return [f"env.robot.{k}={json.dumps(v).replace(' ', '')}" for k, v in robot.items()] + ["env.gaits=null", *extra]


def env_cfg(model: str, backend: str, num_envs: int = 8):
    from robolab.config import build_env_cfg, compose

    cfg = build_env_cfg(
        "RoboLab-Velocity-Flat-Go2-v0", compose("RoboLab-Velocity-Flat-Go2-v0", robot_overrides(model)).env
    )
    cfg.num_envs, cfg.backend.name, cfg.backend.num_threads = num_envs, backend, 1
    return cfg


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ant", "humanoid"])
def test_published_model_trains_on_mujoco_c(tmp_path, model):
    log_root = tmp_path / "logs"
    res = run(
        train_cmd("--num_envs", "32", "env.backend.num_threads=1", "agent.num_steps_per_env=16",
                  "agent.actor.hidden_dims=[64,64]", "agent.critic.hidden_dims=[64,64]", "--max_iterations", "3",
                  "--log_root", str(log_root), *robot_overrides(model)),
        env=clean_env(),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    (summary_path,) = log_root.rglob("summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["iterations"] == 3 and summary["latest_losses"]
    assert all(np.isfinite(v) and abs(v) < 1e6 for v in summary["latest_losses"].values())
    assert summary["diverged_resets"] is not None and summary["diverged_resets"] < 0.05 * 3 * 16 * 32
    print(model, {k: summary[k] for k in ("fall_rate", "mean_episode_length", "diverged_resets", "mean_reward")})
    if model == "ant":  # four legs: it stands under a random policy (a biped falls, which is no divergence)
        assert summary["fall_rate"] is not None and summary["fall_rate"] < 0.5


def test_ant_follows_the_same_trajectory_on_warp_and_mujoco_c():
    pytest.importorskip("mujoco_warp")
    from robolab.envs.backends import make_backend

    trajectories = {}
    for backend in ("mujoco", "warp"):
        cfg = env_cfg("ant", backend, num_envs=4)
        physics = make_backend(cfg.backend, cfg.robot, cfg.sim_dt, cfg.num_envs, "cpu")
        qpos = torch.zeros(4, physics.robot.model.nq)
        qpos[:, 2], qpos[:, 3] = cfg.robot.init_base_height, 1.0
        qpos[:, torch.as_tensor(physics.robot.qpos_adr)] = torch.tensor(cfg.robot.default_joint_pos)
        physics.reset(torch.ones(4, dtype=torch.bool), qpos, torch.zeros(4, physics.robot.model.nv))
        targets = torch.tensor(cfg.robot.default_joint_pos).expand(4, -1) + 0.2 * torch.randn(
            4, 8, generator=torch.Generator().manual_seed(0)
        )
        steps = []
        for _ in range(5):  # 20 physics steps of RK4, the ant falling onto its legs and pushing
            physics.step(targets, cfg.decimation)
            steps.append(physics.qpos.clone())
        trajectories[backend] = torch.stack(steps)
        assert not bool(physics.non_finite.any())
        physics.close()
    torch.testing.assert_close(trajectories["warp"], trajectories["mujoco"], rtol=0, atol=2e-3)


def test_humanoid_is_refused_by_warp_up_front_naming_its_solver(tmp_path, capsys):
    pytest.importorskip("mujoco_warp")
    from robolab.cli.train import main

    log_root = tmp_path / "logs"
    argv = ["--num_envs", "4", "--log_root", str(log_root), *robot_overrides("humanoid"), "env.backend=warp"]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "(MuJoCo Warp: mjSOL_PGS is unsupported;" in lines[0], lines
    assert not log_root.exists()


def test_a_base_mass_range_that_would_make_the_base_weigh_nothing_is_refused(tmp_path, capsys):
    from robolab.cli.train import main

    ant = [o for o in robot_overrides("ant") if not o.startswith("env.events.add_base_mass")]
    assert main(["--num_envs", "4", "--log_root", str(tmp_path / "logs"), *ant]) == 2  # the Go2's range: -1 kg
    line = capsys.readouterr().err.strip()
    assert (
        "env.events.add_base_mass.params.mass_range=[-1.0, 3.0] would make the base body 'torso' (0.327 kg)" in line
    ), line
