"""The rough tasks through every pipeline and feature, end to end on the CPU: PPO with a video clip, AMP, the
height-scan teacher distilled into a blind student, a sweep over terrain seeds, and Sim2Sim from MuJoCo C to
MuJoCo Warp on the same terrain (a small terrain: every default type, 3 levels)."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT, TINY, clean_env, run, train_cmd
from test_terrain import SMALL_OVERRIDES

ROUGH = ["--task", "RoboLab-Velocity-Rough-Go2-v0", *TINY, *SMALL_OVERRIDES]


def only(paths: list) -> object:
    assert len(paths) == 1, paths
    return paths[0]


@pytest.mark.slow
def test_ppo_with_a_video_then_play_and_sim2sim_onto_mujoco_warp(tmp_path):
    logs = tmp_path / "logs"
    video = ["--video", "--video_length", "5", "--video_interval", "8"]
    res = run(
        train_cmd(*ROUGH, "--max_iterations", "2", "--log_root", str(logs), *video), env=clean_env(MUJOCO_GL="egl")
    )
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only(list((logs / "go2_rough").iterdir()))
    assert list((run_dir / "videos" / "train").glob("*.mp4"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "Curriculum/terrain_level/stairs_up" in summary["latest_logged"]
    out = tmp_path / "s2s.json"
    s2s = [sys.executable, str(ROOT / "scripts" / "sim2sim.py"), "--task", "RoboLab-Velocity-Rough-Go2-v0"]
    res = run(
        [
            *s2s,
            "--target",
            "RoboLab-Velocity-Rough-Go2-v0",
            "--log_root",
            str(logs),
            "--num_envs",
            "4",
            "--steps",
            "20",
            "--output",
            str(out),
            "env.backend=warp",
        ]
    )
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["source"]["steps"] == 20 and result["target"]["steps"] == 20


@pytest.mark.slow
def test_amp_on_rough_terrain_trains(tmp_path):
    res = run(
        train_cmd(*ROUGH, "--agent", "rsl_rl_amp_cfg_entry_point", "--max_iterations", "2", "--log_root", str(tmp_path))
    )
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(only(list(tmp_path.glob("go2_rough_amp/*/summary.json"))).read_text())
    assert summary["iterations"] == 2 and "Curriculum/terrain_level" in summary["latest_logged"]


@pytest.mark.slow
def test_a_height_scan_teacher_distils_into_a_blind_student(tmp_path):
    small = ["agent.actor.hidden_dims=[32,32]", "agent.critic.hidden_dims=[32,32]"]
    teacher = [*ROOT_TEACHER, *TINY, *SMALL_OVERRIDES, *small, "--max_iterations", "1", "--log_root", str(tmp_path)]
    res = run(train_cmd(*teacher))
    assert res.returncode == 0, res.stderr[-3000:]
    ppo_only = ("agent.algorithm.", "agent.actor.", "agent.critic.")
    student = [
        "--task",
        "RoboLab-Velocity-Rough-Go2-Distillation-v0",
        *[arg for arg in TINY if not arg.startswith(ppo_only)],
        *SMALL_OVERRIDES,
        "--max_iterations",
        "2",
        "--log_root",
        str(tmp_path),
        "agent.teacher_experiment=go2_rough_teacher",
        "agent.teacher.hidden_dims=[32,32]",
        "agent.student.hidden_dims=[32,32]",
    ]
    res = run(train_cmd(*student))
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(only(list(tmp_path.glob("go2_rough_distillation/*/summary.json"))).read_text())
    assert summary["iterations"] == 2


ROOT_TEACHER = ["--task", "RoboLab-Velocity-Rough-Go2-Teacher-v0"]


@pytest.mark.slow
def test_a_sweep_over_terrain_seeds(tmp_path):
    sweep_dir = tmp_path / "sweep"
    res = run(
        train_cmd("-m", "--sweep_dir", str(sweep_dir), *ROUGH, "--max_iterations", "1", "env.terrain.seed=0,1"),
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert len(list(sweep_dir.glob("*/logs/go2_rough/*/summary.json"))) == 2
