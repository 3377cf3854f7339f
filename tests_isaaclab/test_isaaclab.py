"""robolab inside Isaac Lab 3.0 (kitless, Newton physics on the CPU, offline asset root).

Runs in a Python 3.12 venv with isaaclab==3.0.0 (``.ci/run`` builds or reuses it). Training runs are
subprocesses: Isaac Lab starts one simulation per process.
"""

from __future__ import annotations

import json
import math
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


def run(cmd: list[str], asset_root: str, cwd=None, timeout: float = 600, site=None) -> subprocess.CompletedProcess:
    """``cmd`` with the offline asset root (and ``site`` first on the Python path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_"))}
    env.update(ISAACSIM_ASSET_ROOT=asset_root, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def train(task: str, log_root: Path, asset_root: str, *extra: str) -> subprocess.CompletedProcess:
    """``train.py`` on an Isaac Lab task at smoke-test size."""
    return run([sys.executable, TRAIN, "--task", task, *TINY, "--log_root", str(log_root), *extra], asset_root)


def isaaclab_cli(verb: str, task: str, *args: str) -> list[str]:
    """Isaac Lab's own ``isaaclab train|play --rl_library rsl_rl`` on the CPU."""
    isaaclab = str(Path(sys.executable).parent / "isaaclab")
    return [isaaclab, verb, "--rl_library", "rsl_rl", "--task", task, "--device", "cpu", "agent.device=cpu", *args]


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
        assert spec.entry_point == "isaaclab.envs:ManagerBasedRLEnv" and tasks.kind_of(task_id).name == "isaaclab"
        env_cfg = load_cfg_from_registry(task_id, "env_cfg_entry_point")
        agent_cfg = load_cfg_from_registry(task_id, "rsl_rl_cfg_entry_point")
        assert env_cfg.observations.critic.enable_corruption is False
        assert env_cfg.observations.teacher is not None and env_cfg.observations.policy.enable_corruption
        assert hasattr(env_cfg.observations, "amp") == ("Go2" in task_id)
        assert type(agent_cfg).__module__ == "robolab.tasks.isaaclab.agents"  # the agent robolab trains
        assert agent_cfg.obs_groups["critic"] == ["critic"] and agent_cfg.max_iterations > 0


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
        assert math.isfinite(summary["latest_losses"]["behavior"])  # the distillation update ran
    assert "scene" in (run_path / "params" / "env.yaml").read_text()


def test_isaaclab_own_trainer_trains_the_robolab_task(asset_root, tmp_path):
    args = ("--num_envs", "8", "--max_iterations", "2")
    res = run(isaaclab_cli("train", "RoboLab-Isaac-Velocity-Flat-Go2", *args), asset_root, cwd=tmp_path)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert list((tmp_path / "logs" / "rsl_rl").glob("*/*/model_1.pt"))


def train_two_gloo_ranks(task: str, log_root: Path, asset_root: str, site=None) -> Path:
    """The source document's launch (torchrun, ``--distributed``) on 2 CPU ranks with the replication check every
    iteration; returns the run directory."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    res = run(
        [*torchrun, TRAIN, "--distributed", "--headless", "--task", task, *TINY, "--log_root", str(log_root),
         "--check_replication_every", "1"],
        asset_root,
        site=site,
    )  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert res.stdout.count("replication check passed") == 2
    (run_path,) = log_root.glob("*/*")
    assert json.loads((run_path / "summary.json").read_text())["world_size"] == 2
    return run_path


def test_two_gloo_ranks_train_isaaclab_own_task_with_identical_models(asset_root, tmp_path):
    run_path = train_two_gloo_ranks("Isaac-Velocity-Flat-UnitreeGo2", tmp_path, asset_root)
    assert run_path.parent.name == "unitree_go2_flat"


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

    # Isaac Lab's own player loads robolab's checkpoint (strict state dicts: the agent it builds from the task's
    # entry point is the one robolab trained), plays it and exports the same policy robolab exported.
    ours = run_path / "exported" / "robolab_policy.pt"
    (run_path / "exported" / "policy.pt").rename(ours)
    checkpoint = ("--checkpoint", str(run_path / "model_1.pt"), "--num_envs", "4")
    video = ("--video", "--video_length", "4", "--visualizer", "newton")  # --video bounds the playback
    res = run(isaaclab_cli("play", "RoboLab-Isaac-Velocity-Flat-Go2", *checkpoint, *video), asset_root, cwd=tmp_path)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "Loading model checkpoint from" in res.stdout and (run_path / "exported" / "policy.pt").exists()
    import torch

    theirs, mine = torch.jit.load(run_path / "exported" / "policy.pt"), torch.jit.load(ours)
    obs = torch.randn(16, next(p for p in mine.parameters() if p.dim() == 2).shape[1])
    torch.testing.assert_close(theirs(obs), mine(obs))


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


# --- any Isaac Lab task (issue 14) ----------------------------------------------------------------------------
def isaaclab_rsl_rl_dict(task_id: str, entry: str) -> dict:
    """What Isaac Lab's trainer hands rsl_rl for ``task_id``'s agent ``entry`` (its train.py's steps)."""
    from isaaclab_rl.rsl_rl import check_rsl_rl_version, handle_deprecated_rsl_rl_cfg
    from isaaclab_tasks.utils import resolve_task_config

    _, agent_cfg = resolve_task_config(task_id, entry, overrides=[])
    return handle_deprecated_rsl_rl_cfg(agent_cfg, check_rsl_rl_version()).to_dict()


def plain(value):
    """Tuples as lists, so Isaac Lab's config values and robolab's (through OmegaConf) compare."""
    return json.loads(json.dumps(value, default=str))


def test_every_isaaclab_agent_config_is_translated_exactly_or_refused_in_one_line():
    """robolab's agent for each Isaac Lab task and agent entry point holds what Isaac Lab's trainer hands rsl_rl:
    runner settings, observation groups, models and algorithm, value for value (the RoboLab-Isaac-* tasks' own
    entry points included: one source of truth). What robolab cannot translate is a one-line error naming the field.
    """
    from isaaclab_tasks.utils import resolve_task_config

    from robolab import tasks
    from robolab.config import ConfigError, agent_dict, compose
    from robolab.rsl_rl_api import resolve_obs_groups
    from robolab.tasks.isaaclab.agent_cfg import MODELS, RUNNER_KEYS, observation_groups

    translated, refused = [], []
    for task_id in [t for t in tasks.list_tasks() if tasks.kind_of(t).name == "isaaclab"]:
        for entry in tasks.agent_entry_points(task_id):
            try:
                cfg = compose(task_id, [], agent=entry)
            except ConfigError as err:
                assert "\n" not in str(err) and f"{task_id} {entry}: " in str(err), err
                refused.append(str(err))
                continue
            ours, theirs = agent_dict(cfg), isaaclab_rsl_rl_dict(task_id, entry)
            models = MODELS["distillation" if theirs["class_name"] == "DistillationRunner" else "on_policy"]
            # the observation sets rsl_rl resolves from the env's groups (robolab writes them out)
            env_groups = observation_groups(resolve_task_config(task_id, None, overrides=[])[0])
            default_sets = [*models, *(["rnd_state"] if theirs["algorithm"].get("rnd_cfg") else [])]
            theirs["obs_groups"] = resolve_obs_groups(dict.fromkeys(env_groups), theirs["obs_groups"], default_sets)
            for key in [k for k in (*RUNNER_KEYS, *models) if k in theirs]:
                assert plain(ours[key]) == plain(theirs[key]), (task_id, entry, key)
            for key, value in theirs["algorithm"].items():
                if key != "class_name":
                    assert plain(ours["algorithm"][key]) == plain(value), (task_id, entry, key)
            assert cfg.seed == theirs["seed"]
            translated.append((task_id, entry))
    assert ("Isaac-Velocity-Flat-UnitreeGo2", "rsl_rl_cfg_entry_point") in translated
    assert ("RoboLab-Isaac-Velocity-Rough-G1", "rsl_rl_cfg_entry_point") in translated
    assert ("Isaac-Velocity-Flat-AnymalD", "rsl_rl_distillation_cfg_entry_point") in translated
    assert len(translated) >= 100 and len(refused) <= 5, refused  # Isaac Lab 3.0: 105 agents, 2 custom algorithms
    assert any("algorithm.class_name=" in err for err in refused)


def test_untranslatable_agent_configs_are_one_line_errors_naming_the_field():
    from isaaclab_tasks.core.velocity.config.go2.agents.rsl_rl_ppo_cfg import UnitreeGo2FlatPPORunnerCfg

    from robolab.config import ConfigError
    from robolab.tasks.isaaclab.agent_cfg import translate

    def refused(change) -> str:
        cfg = UnitreeGo2FlatPPORunnerCfg()
        change(cfg)
        with pytest.raises(ConfigError) as err:
            translate(cfg, "MyTask rsl_rl_cfg_entry_point")
        assert "\n" not in str(err.value) and str(err.value).startswith("MyTask rsl_rl_cfg_entry_point: ")
        return str(err.value)

    assert "algorithm.class_name='MyPPO'" in refused(lambda c: setattr(c.algorithm, "class_name", "MyPPO"))
    assert "class_name='MyRunner'" in refused(lambda c: setattr(c, "class_name", "MyRunner"))
    assert "algorithm.my_knob=3" in refused(lambda c: setattr(c.algorithm, "my_knob", 3))
    assert "my_flag=True" in refused(lambda c: setattr(c, "my_flag", True))


def test_an_unknown_agent_entry_or_a_pipeline_the_agent_cannot_take_is_a_one_line_error():
    from robolab.config import ConfigError, compose

    unknown = "--agent='rsl_rl_nope': not an agent entry point of Isaac-Velocity-Flat-UnitreeGo2"
    with pytest.raises(ConfigError, match=unknown):
        compose("Isaac-Velocity-Flat-UnitreeGo2", [], agent="rsl_rl_nope")
    distillation = "rsl_rl_distillation_cfg_entry_point"
    with pytest.raises(ConfigError, match="is a distillation agent; pick a PPO agent with --agent"):
        compose("Isaac-Velocity-Flat-AnymalD", ["runner=on_policy", "algorithm=ppo"], agent=distillation)


def test_isaaclab_launch_flags_reach_the_launcher_and_embedded_tasks_refuse_them():
    from robolab.cli import isaaclab_launcher_args, parse_policy_flags
    from robolab.cli.play import build_parser as play_parser
    from robolab.cli.train import parse_flags

    args, overrides = parse_flags(
        [
            "--task",
            "Isaac-Velocity-Flat-UnitreeGo2",
            "--visualizer",
            "newton",
            "--headless",
            "--kit_args",
            "--x=1",
            "physics=newton_mjwarp",
            "--device",
            "cpu",
        ]
    )
    launcher = isaaclab_launcher_args(args)
    # Isaac Lab's own parsing: "newton" is its alias of the newton_gl visualiser
    assert launcher["visualizer"] == ["newton_gl"] and launcher["headless"] is True and launcher["kit_args"] == "--x=1"
    assert "device" not in launcher and args.device == "cpu"  # robolab's --device (and rank) decide the device
    assert overrides == ["physics=newton_mjwarp"]
    args, _ = parse_flags(["--task", "RoboLab-Velocity-Flat-Go2-v0", "--visualizer", "newton"])
    with pytest.raises(ValueError, match="--visualizer: an Isaac Lab launch flag"):
        isaaclab_launcher_args(args)
    # play.py takes them too
    args, overrides, _ = parse_policy_flags(
        play_parser(), ["--task", "RoboLab-Isaac-Velocity-Flat-Go2", "--livestream", "1", "presets=newton_kamino"]
    )
    assert isaaclab_launcher_args(args)["livestream"] == 1 and overrides == ["presets=newton_kamino"]


def test_isaaclab_own_go2_task_trains_under_robolab_with_its_own_agent_and_physics_preset(asset_root, tmp_path):
    """Isaac Lab's id, served by the offline asset root; its agent as Isaac Lab defines it; a physics preset token."""
    import yaml

    res = train("Isaac-Velocity-Flat-UnitreeGo2", tmp_path, asset_root, "physics=newton_kamino", "--headless")
    assert res.returncode == 0, res.stderr[-3000:]
    (run_path,) = tmp_path.glob("unitree_go2_flat/*")  # Isaac Lab's experiment name
    assert (run_path / "model_1.pt").exists()
    agent = yaml.safe_load((run_path / "params" / "agent.yaml").read_text())
    assert agent["obs_groups"] == {"actor": ["policy"], "critic": ["policy"]}  # Isaac Lab's, not robolab's
    assert agent["actor"]["obs_normalization"] is False and agent["actor"]["hidden_dims"] == [128, 128, 128]
    env = yaml.safe_load((run_path / "params" / "env.yaml").read_text())
    assert env["sim"]["physics"]["class_type"].endswith("NewtonKaminoManager")  # not the default MuJoCo Warp solver
    bad = train("Isaac-Velocity-Flat-UnitreeGo2", tmp_path / "bad", asset_root, "physics=no_such_physics")
    assert bad.returncode == 2 and "no_such_physics" in bad.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("pipeline", "group"),
    [(["runner=amp", "algorithm=ppo_amp"], "amp"), (["runner=distillation", "algorithm=distillation"], "teacher")],
)
def test_a_task_without_the_group_a_runner_needs_is_a_one_line_error(asset_root, tmp_path, pipeline, group):
    res = train("Isaac-Velocity-Flat-UnitreeGo2", tmp_path, asset_root, *pipeline)
    assert res.returncode == 2, res.stderr[-3000:]
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert f"observation group '{group}'" in line and "it has: policy" in line and f"named {group}" in line
    assert not list(tmp_path.glob("*/*"))  # no run directory


EXTENSION = """
import gymnasium as gym
from isaaclab.utils import configclass
from isaaclab_tasks.core.velocity.config.go2.agents.rsl_rl_ppo_cfg import UnitreeGo2FlatPPORunnerCfg
from isaaclab_tasks.core.velocity.config.go2.flat_env_cfg import UnitreeGo2FlatEnvCfg


@configclass
class MyGo2EnvCfg(UnitreeGo2FlatEnvCfg):
    def __post_init__(self):
        super().__post_init__()
        self.rewards.feet_air_time.weight = 0.75


@configclass
class MyGo2AgentCfg(UnitreeGo2FlatPPORunnerCfg):
    def __post_init__(self):
        super().__post_init__()
        self.experiment_name = "my_go2"
        self.actor.hidden_dims = [48, 24]
        self.algorithm.entropy_coef = 0.002


gym.register(
    id="MyLab-Velocity-Flat-Go2",
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    disable_env_checker=True,
    kwargs={"env_cfg_entry_point": f"{__name__}:MyGo2EnvCfg", "rsl_rl_cfg_entry_point": f"{__name__}:MyGo2AgentCfg"},
)
"""


def test_a_users_extension_task_found_through_the_isaaclab_entry_point_trains(asset_root, tmp_path):
    """A package that registers its task through ``isaaclab.tasks`` (as Isaac Lab's template does) is found by
    ``--list_tasks`` and trained with its own env and agent, 2 gloo ranks kept identical."""
    site = tmp_path / "site"
    (site / "mylab").mkdir(parents=True)
    (site / "mylab" / "__init__.py").write_text(EXTENSION)
    dist = site / "mylab-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[isaaclab.tasks]\nmylab = mylab\n")
    listed = run([sys.executable, TRAIN, "--list_tasks"], asset_root, site=site)
    assert "MyLab-Velocity-Flat-Go2" in listed.stdout, listed.stderr[-2000:]
    run_path = train_two_gloo_ranks("MyLab-Velocity-Flat-Go2", tmp_path / "logs", asset_root, site=site)
    assert run_path.parent.name == "my_go2"
    agent = (run_path / "params" / "agent.yaml").read_text()
    assert "entropy_coef: 0.002" in agent and "- 48\n  - 24" in agent
    assert "weight: 0.75" in (run_path / "params" / "env.yaml").read_text()
