"""robolab inside Isaac Lab 3.0 (kitless, Newton physics on the CPU, offline asset root).

Runs in a Python 3.12 venv with isaaclab==3.0.0 (``.ci/run`` builds or reuses it). Training runs are
subprocesses: Isaac Lab starts one simulation per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "scripts" / "train.py")
TINY = ["--num_envs", "8", "--max_iterations", "2", "--device", "cpu", "agent.num_steps_per_env=8"]
ROBOLAB_IDS = [f"RoboLab-Isaac-Velocity-{t}-{r}" for r in ("Go2", "AnymalD", "G1") for t in ("Flat", "Rough")]


@pytest.fixture(scope="session")
def asset_root(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("isaac_assets"))
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "isaac_asset_root.py"), "--root", root],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return root


def run(cmd: list[str], asset_root: str, cwd=None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_"))}
    env.update(ISAACSIM_ASSET_ROOT=asset_root, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def train(task: str, log_root: Path, asset_root: str, *extra: str) -> subprocess.CompletedProcess:
    """``train.py`` on an Isaac Lab task at smoke-test size."""
    return run([sys.executable, TRAIN, "--task", task, *TINY, "--log_root", str(log_root), *extra], asset_root)


def run_dir(log_root: Path, experiment: str) -> Path:
    (found,) = (log_root / experiment).glob("*")
    return found


def test_tasks_register_with_robolab_and_isaaclab_entry_points():
    import gymnasium as gym
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    from robolab import tasks

    assert set(ROBOLAB_IDS) <= set(tasks.list_tasks())
    for task_id in ROBOLAB_IDS:
        spec = gym.spec(task_id)
        assert spec.entry_point == "isaaclab.envs:ManagerBasedRLEnv" and tasks.is_isaaclab_task(task_id)
        env_cfg = load_cfg_from_registry(task_id, "env_cfg_entry_point")
        agent_cfg = load_cfg_from_registry(task_id, "rsl_rl_cfg_entry_point")
        assert env_cfg.observations.critic.enable_corruption is False
        assert env_cfg.observations.teacher is not None and env_cfg.observations.policy.enable_corruption
        assert hasattr(env_cfg.observations, "amp") == ("Go2" in task_id)
        assert agent_cfg.max_iterations > 0


def test_isaaclab_finds_robolab_through_its_entry_point():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="isaaclab.tasks") if e.name == "robolab"]
    assert ep.value == "robolab.tasks.isaaclab"


def test_hydra_overrides_reach_env_and_agent():
    from isaaclab_tasks.utils import resolve_task_config
    from omegaconf import OmegaConf

    from robolab.config import ConfigError, agent_dict, compose
    from robolab.tasks.isaaclab.vecenv import apply_env_overrides

    cfg = compose(
        "RoboLab-Isaac-Velocity-Rough-AnymalD",
        [
            "env.num_envs=3",
            "env.rewards.feet_air_time.weight=0.5",
            "agent.algorithm.learning_rate=3e-4",
            "runner=distillation",
            "algorithm=distillation",
        ],
    )
    agent = agent_dict(cfg)
    assert agent["runner_class_name"] == "robolab.runners:DistillationRunner"
    assert agent["student"]["class_name"] == "MLPModel" and agent["obs_groups"]["teacher"] == ["teacher"]
    env_cfg, _ = resolve_task_config("RoboLab-Isaac-Velocity-Rough-AnymalD", None, overrides=[])
    apply_env_overrides(env_cfg, OmegaConf.to_container(cfg.env))
    assert env_cfg.scene.num_envs == 3 and env_cfg.rewards.feet_air_time.weight == 0.5
    assert (
        agent_dict(compose("RoboLab-Isaac-Velocity-Flat-G1", ["agent.algorithm.learning_rate=3e-4"]))["algorithm"][
            "learning_rate"
        ]
        == 3e-4
    )
    with pytest.raises(ConfigError, match="no_such_term"):
        apply_env_overrides(env_cfg, {"rewards": {"no_such_term": 1.0}})


def test_asset_root_holds_a_flat_go2_articulation_and_a_ground_plane(asset_root):
    from pxr import Usd, UsdPhysics

    from robolab.tasks.isaaclab.assets import GROUND_USD, ROBOT_USD

    stage = Usd.Stage.Open(os.path.join(asset_root, ROBOT_USD))
    root = stage.GetDefaultPrim().GetPath()
    bodies = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    assert len(bodies) == 17 and all(p.GetPath().GetParentPath() == root for p in bodies)  # base, 4 x 4 links
    revolute = [p for p in stage.Traverse() if p.IsA(UsdPhysics.RevoluteJoint)]
    assert sorted(p.GetName() for p in revolute) == sorted(
        f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")
    )
    ground = Usd.Stage.Open(os.path.join(asset_root, GROUND_USD))
    assert any(p.GetTypeName() == "Plane" and p.HasAPI(UsdPhysics.CollisionAPI) for p in ground.Traverse())


@pytest.mark.parametrize("pipeline", ["ppo", "amp", "distillation"])
def test_robolab_train_runs_isaaclab_go2_kitless_on_cpu(asset_root, tmp_path, pipeline):
    logs = tmp_path / "logs"
    extra = {
        "ppo": [],
        "amp": [
            "runner=amp",
            "algorithm=ppo_amp",
            "agent.algorithm.amp_cfg.batch_size=64",
            "agent.algorithm.amp_cfg.hidden_dims=[32,32]",
        ],
    }
    if pipeline == "distillation":
        teacher = run(
            [
                sys.executable,
                TRAIN,
                "--task",
                "RoboLab-Isaac-Velocity-Flat-Go2",
                *TINY,
                "--log_root",
                str(tmp_path / "teacher"),
            ],
            asset_root,
        )
        assert teacher.returncode == 0, teacher.stderr[-3000:]
        ckpt = run_dir(tmp_path / "teacher", "isaac_go2_flat") / "model_1.pt"
        extra["distillation"] = ["runner=distillation", "algorithm=distillation", "--teacher_checkpoint", str(ckpt)]
    res = run(
        [
            sys.executable,
            TRAIN,
            "--task",
            "RoboLab-Isaac-Velocity-Flat-Go2",
            *TINY,
            "--log_root",
            str(logs),
            *extra[pipeline],
        ],
        asset_root,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (run_path,) = logs.glob("*/*")
    assert (run_path / "model_1.pt").exists()
    summary = json.loads((run_path / "summary.json").read_text())
    assert summary["task"] == "RoboLab-Isaac-Velocity-Flat-Go2" and summary["total_env_steps"] == 2 * 8 * 8
    logged = summary["latest_logged"]
    assert any(k.startswith("Episode_Reward/") for k in logged)  # Isaac Lab's reward manager ran
    if pipeline == "amp":
        assert 0.0 <= logged["AMP/style_reward"] <= 1.0
    if pipeline == "distillation":
        assert "Mean behavior loss" in res.stdout
    assert "scene" in (run_path / "params" / "env.yaml").read_text()


def test_isaaclab_own_trainer_trains_the_robolab_task(asset_root, tmp_path):
    isaaclab = str(Path(sys.executable).parent / "isaaclab")
    res = run(
        [
            isaaclab,
            "train",
            "--rl_library",
            "rsl_rl",
            "--task",
            "RoboLab-Isaac-Velocity-Flat-Go2",
            "--num_envs",
            "8",
            "--max_iterations",
            "2",
            "--device",
            "cpu",
            "agent.device=cpu",
        ],
        asset_root,
        cwd=tmp_path,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert list((tmp_path / "logs" / "rsl_rl").glob("*/*/model_1.pt"))


def test_two_gloo_ranks_train_an_isaaclab_task_with_identical_models(asset_root, tmp_path):
    res = run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            TRAIN,
            "--distributed",
            "--task",
            "RoboLab-Isaac-Velocity-Flat-Go2",
            *TINY,
            "--log_root",
            str(tmp_path),
            "--check_replication_every",
            "1",
        ],
        asset_root,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert res.stdout.count("replication check passed") == 2
    (run_path,) = tmp_path.glob("*/*")
    assert json.loads((run_path / "summary.json").read_text())["world_size"] == 2


def test_bad_env_override_is_a_one_line_error(asset_root, tmp_path):
    res = train("RoboLab-Isaac-Velocity-Flat-Go2", tmp_path, asset_root, "env.rewards.no_such_term.weight=1")
    assert res.returncode == 2
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "no_such_term" in line


def test_rough_go2_trains_offline_with_generated_terrain_and_height_scan(asset_root, tmp_path):
    res = train("RoboLab-Isaac-Velocity-Rough-Go2", tmp_path, asset_root)
    assert res.returncode == 0, res.stderr[-3000:]
    (run_path,) = tmp_path.glob("isaac_go2_rough/*")
    assert (run_path / "model_1.pt").exists()
    assert "height_scan" in (run_path / "params" / "env.yaml").read_text()


def test_play_evaluates_and_exports_an_isaaclab_policy(asset_root, tmp_path):
    # Isaac Lab's --video (its own recorder, from Newton's visualiser: Kit needs Isaac Sim) and IO descriptors
    video = ["--video", "--video_length", "4", "--video_interval", "8", "--export_io_descriptors"]
    res = train("RoboLab-Isaac-Velocity-Flat-Go2", tmp_path, asset_root, *video)
    assert res.returncode == 0, res.stderr[-3000:]
    (run_path,) = tmp_path.glob("isaac_go2_flat/*")
    clips = sorted((run_path / "videos" / "train").glob("*.mp4"))
    assert len(clips) >= 2 and all(c.stat().st_size > 1000 for c in clips), clips
    assert list((run_path / "params").glob("*.yaml")) and "observations" in "".join(
        p.read_text() for p in (run_path / "params").glob("*IO_descriptors*.yaml")
    )
    play = [
        sys.executable,
        str(ROOT / "scripts" / "play.py"),
        "--task",
        "RoboLab-Isaac-Velocity-Flat-Go2",
        "--run",
        str(run_path),
        "--num_envs",
        "4",
        "--steps",
        "20",
    ]
    res = run(play, asset_root)
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(res.stdout[res.stdout.rindex("{\n") :])
    assert result["checkpoint"].endswith("model_1.pt") and result["steps"] == 20
    assert 0.0 <= result["lin_vel_tracking_error"] < 10.0 and 0.0 <= result["fall_rate"] <= 1.0
    assert (run_path / "exported" / "policy.onnx").exists() and (run_path / "exported" / "policy.pt").exists()
    res = run([*play, "--viewer"], asset_root)  # robolab's viewers show MuJoCo state only
    assert res.returncode == 2 and "--viewer: shows the embedded MuJoCo tasks" in res.stderr
    res = run([*play, "--video", "--video_length", "4", "--no_export"], asset_root)
    assert res.returncode == 0, res.stderr[-3000:]
    assert list((run_path / "videos" / "play").glob("*.mp4"))


def test_sim2sim_maps_an_isaaclab_policy_onto_the_mujoco_env(asset_root, tmp_path):
    res = train("RoboLab-Isaac-Velocity-Flat-Go2", tmp_path, asset_root)
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "s2s.json"
    sim2sim = [sys.executable, str(ROOT / "scripts" / "sim2sim.py"), "--task", "RoboLab-Isaac-Velocity-Flat-Go2"]
    args = ["--target", "RoboLab-Velocity-Flat-Go2-v0", "--log_root", str(tmp_path), "--device", "cpu"]
    res = run([*sim2sim, *args, "--num_envs", "4", "--steps", "20", "--output", str(out)], asset_root)
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(out.read_text())
    source, target = result["mapping"]["source"], result["mapping"]["target"]
    # derived from the two envs: the same joints (Isaac Lab's articulation order vs the MJCF's), terms by name
    assert sorted(source["joint_names"]) == sorted(target["joint_names"]) and len(source["joint_names"]) == 12
    assert [t["name"] for t in source["terms"]] == [t["name"] for t in target["terms"]]
    assert source["dt"] == target["dt"] == 0.02
    assert result["source"]["steps"] == result["target"]["steps"] == 20
    # a control rate the policy was not trained at is named, not run
    res = run([*sim2sim, *args, "--num_envs", "4", "--steps", "5", "env.decimation=2"], asset_root)
    assert res.returncode == 2 and "error: control period" in res.stderr
