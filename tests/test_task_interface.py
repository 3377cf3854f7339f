"""One task interface (``robolab.tasks.interface.TaskKind``): a third kind of task (a user's own VecEnv) trains and
plays through it, and a robot is a folder, found without editing robolab (docs/your_own_robot.md, step by step)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, TRAIN, clean_env, run

PLAY = str(ROOT / "scripts" / "play.py")
HELPERS = str(ROOT / "tests")


def with_packages(path: str, packages: str) -> dict:
    env = clean_env(ROBOLAB_TASK_PACKAGES=packages)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH", "")]))
    return env


@pytest.mark.slow
def test_a_users_own_vecenv_trains_and_plays_through_the_task_interface(tmp_path):
    env = with_packages(HELPERS, "helpers.toy_task")
    log_root = str(tmp_path / "logs")
    common = ["--task", "Toy-PointMass-v0", "--num_envs", "32"]
    res = run([sys.executable, TRAIN, *common, "--max_iterations", "2", "--log_root", log_root], env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    (summary,) = Path(log_root).rglob("summary.json")
    result = json.loads(summary.read_text())
    assert result["task"] == "Toy-PointMass-v0" and result["iterations"] == 2
    assert result["total_env_steps"] == 2 * 16 * 32  # the inline agent's num_steps_per_env
    assert "max_speed: 1.0" in (summary.parent / "params" / "env.yaml").read_text()  # its own env dataclass
    bad = run([sys.executable, TRAIN, *common, "env.max_sped=2", "--log_root", log_root], env=env)
    assert bad.returncode == 2 and "max_sped" in bad.stderr.strip().splitlines()[-1]
    video = run([sys.executable, TRAIN, *common, "--video", "--log_root", log_root], env=env)
    assert video.returncode == 2 and "has no renderer" in video.stderr  # the kind's own refusal
    play = run([sys.executable, PLAY, *common, "--log_root", log_root, "--no_export", "--device", "cpu"], env=env)
    assert play.returncode == 0, play.stderr[-3000:]
    played = json.loads(play.stdout[play.stdout.index("{") :])
    assert played["steps"] == 40 and 0.0 <= played["lin_vel_tracking_error"] < 3.0  # one 2 s episode at 20 Hz


def write_robot_folder(package: Path) -> None:
    """The steps of docs/your_own_robot.md: an MJCF, the robot's constants and env config, its task registration."""
    from robolab.assets.go2 import build_go2_spec
    from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg

    package.mkdir(parents=True)
    (package / "robot.xml").write_text(build_go2_spec(go2_robot_cfg()).to_xml())  # "your" robot's MJCF
    (package / "env_cfgs.py").write_text(
        textwrap.dedent(
            """
            import os
            from dataclasses import dataclass, field

            from robolab.assets.robot_cfg import ActuatorCfg, RobotCfg
            from robolab.envs.velocity_env_cfg import VelocityEnvCfg

            LEGS = ("FL", "FR", "RL", "RR")


            def my_robot() -> RobotCfg:
                return RobotCfg(
                    mjcf_path=os.path.join(os.path.dirname(__file__), "robot.xml"),
                    base_body="base",
                    joint_names=[f"{leg}_{part}_joint" for leg in LEGS for part in ("hip", "thigh", "calf")],
                    foot_bodies=[f"{leg}_foot" for leg in LEGS],
                    undesired_contact_bodies=[f"{leg}_thigh" for leg in LEGS],
                    termination_contact_bodies=["base"],
                    default_joint_pos=[0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5],
                    init_base_height=0.34,
                    stiffness=25.0,
                    damping=0.5,
                    torque_limits=[23.7, 23.7, 45.43] * 4,
                    actuators={"legs": ActuatorCfg(model="dc_motor", velocity_limit=30.0)},
                )


            @dataclass
            class MyRobotFlatEnvCfg(VelocityEnvCfg):
                robot: RobotCfg = field(default_factory=my_robot)

                def __post_init__(self):
                    self.rewards["feet_air_time"].weight = 0.5
            """
        )
    )
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from robolab.tasks.registry import register_task

            register_task(
                "MyRobot-Velocity-Flat-v0",
                env_cfg_entry_point="my_robot.env_cfgs:MyRobotFlatEnvCfg",
                agents={
                    "rsl_rl_cfg_entry_point": {
                        "runner": "on_policy",
                        "agent": {"experiment_name": "my_robot_flat", "max_iterations": 1000},
                    }
                },
                description="my quadruped on flat ground",
            )
            """
        )
    )


@pytest.mark.slow
def test_your_own_robot_is_a_folder_that_trains_and_plays(tmp_path):
    write_robot_folder(tmp_path / "pkgs" / "my_robot")
    env = with_packages(str(tmp_path / "pkgs"), "my_robot")
    log_root = str(tmp_path / "logs")
    tiny = ["--num_envs", "16", "env.backend.num_threads=1", "agent.num_steps_per_env=8"]
    listed = run([sys.executable, TRAIN, "--list_tasks"], env=env)
    assert listed.returncode == 0 and "MyRobot-Velocity-Flat-v0" in listed.stdout, listed.stderr[-2000:]
    res = run(
        [
            sys.executable,
            TRAIN,
            "--task",
            "MyRobot-Velocity-Flat-v0",
            *tiny,
            "--max_iterations",
            "1",
            "--log_root",
            log_root,
        ],
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (run_dir,) = (Path(log_root) / "my_robot_flat").iterdir()
    saved = (run_dir / "params" / "env.yaml").read_text()
    assert "robot.xml" in saved and "weight: 0.5" in saved  # its MJCF and its own reward weight
    play = run(
        [sys.executable, PLAY, "--task", "MyRobot-Velocity-Flat-v0", "--log_root", log_root, "--num_envs", "4"]
        + ["--steps", "5", "--no_export", "--device", "cpu"],
        env=env,
    )
    assert play.returncode == 0, play.stderr[-3000:]


def test_a_task_package_that_does_not_import_is_a_one_line_error(tmp_path):
    env = with_packages(str(tmp_path), "no_such_package")
    res = subprocess.run(
        [sys.executable, TRAIN, "--task", "Nope-v0", "--max_iterations", "1"], capture_output=True, text=True, env=env
    )
    assert res.returncode == 2
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("error: $ROBOLAB_TASK_PACKAGES: cannot import the task package 'no_such_package'"), line
