"""Teacher-student distillation: the pipeline, its errors, and identical ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, run, train_cmd
from robolab.cli.plot import read_scalars
from test_distributed import torchrun

TEACHER = "RoboLab-Velocity-Flat-Go2-Teacher-v0"
STUDENT = "RoboLab-Velocity-Flat-Go2-Distillation-v0"
SMALL = ["--num_envs", "32", "env.backend.num_threads=1", "agent.num_steps_per_env=12"]
TEACHER_NETS = ["agent.actor.hidden_dims=[32]", "agent.critic.hidden_dims=[32]"]
STUDENT_NETS = [
    "agent.teacher.hidden_dims=[32]",
    "agent.student.hidden_dims=[32,32]",
    "agent.algorithm.gradient_length=6",
]


def train_teacher(log_root: str) -> Path:
    res = run(train_cmd("--task", TEACHER, *SMALL, *TEACHER_NETS, "--max_iterations", "2", "--log_root", log_root))
    assert res.returncode == 0, res.stderr[-3000:]
    return next(Path(log_root, "go2_flat_teacher").glob("*/model_1.pt"))


def behavior_losses(run_dir: Path) -> list[float]:
    """The behaviour loss of every iteration, in order, from the run's TensorBoard events (resumes included)."""
    return [value for _, _, value in sorted(read_scalars(str(run_dir))["Loss/behavior"])]


@pytest.mark.slow
def test_student_learns_from_the_newest_teacher_and_its_loss_falls(log_root):
    teacher = train_teacher(log_root)
    # The student on MuJoCo Warp (warp's CPU device), the teacher trained on MuJoCo C: the GPU backend serves
    # distillation's `teacher` group, and a teacher carries over between backends.
    res = run(
        train_cmd("--task", STUDENT, *SMALL, *STUDENT_NETS, "--max_iterations", "8", "--log_root", log_root)
        + ["env.backend=warp"]
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"teacher loaded from {teacher}" in res.stdout
    run_dir = next(Path(log_root, "go2_flat_distillation").iterdir())
    losses = behavior_losses(run_dir)
    assert len(losses) == 8
    assert sum(losses[-3:]) / 3 < 0.5 * losses[0]  # the student closes in on the fixed teacher
    assert json.loads((run_dir / "summary.json").read_text())["iterations"] == 8


@pytest.mark.slow
def test_teacher_of_the_wrong_shape_is_a_one_line_error(log_root):
    res = run(train_cmd(*SMALL, *TEACHER_NETS, "--max_iterations", "1", "--log_root", log_root))  # actor reads `policy`
    assert res.returncode == 0, res.stderr[-3000:]
    wrong = next(Path(log_root, "go2_flat").glob("*/model_0.pt"))
    res = run(
        train_cmd(
            "--task",
            STUDENT,
            *SMALL,
            *STUDENT_NETS,
            "--max_iterations",
            "1",
            "--log_root",
            log_root,
            "--teacher_checkpoint",
            str(wrong),
        )
    )
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "has shape (1, 48), the teacher model expects (1, 54)" in lines[0]


@pytest.mark.slow
def test_missing_teacher_and_mismatched_pipeline_are_one_line_errors(log_root):
    res = run(train_cmd("--task", STUDENT, *SMALL, "--max_iterations", "1", "--log_root", log_root))
    assert res.returncode == 2 and "no teacher checkpoint" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = run(train_cmd(*SMALL, "--max_iterations", "1", "--log_root", log_root, "runner=distillation"))
    assert res.returncode == 2
    assert "runner=distillation does not work with algorithm=ppo; allowed pairs:" in res.stderr


@pytest.mark.slow
def test_two_rank_distillation_ends_with_identical_students(tmp_path):
    log_root = str(tmp_path / "logs")
    train_teacher(log_root)
    dump = tmp_path / "dump"
    dump.mkdir()
    args = [
        "--distributed",
        "--device",
        "cpu",
        "--task",
        STUDENT,
        *SMALL,
        *STUDENT_NETS,
        "--max_iterations",
        "3",
        "--log_root",
        log_root,
        "--check_replication_every",
        "1",
        "env.backend=warp",  # the student on MuJoCo Warp (warp's CPU device): the GPU backend's path on 2 ranks
    ]
    res = run(torchrun(2, str(ROOT / "tests" / "helpers" / "train_and_dump.py"), str(dump), *args), timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    ranks = [json.loads((dump / f"rank{r}.json").read_text())["digests"] for r in range(2)]
    assert any(name.startswith("student.") for name in ranks[0]) and any(".state." in n for n in ranks[0])
    assert ranks[0] == ranks[1]
    assert "replication check passed" in res.stdout


@pytest.mark.slow
def test_recurrent_student_trains_and_resumes(log_root):
    train_teacher(log_root)
    rnn = ["agent.student.class_name=RNNModel", "+agent.student.rnn_type=gru", "+agent.student.rnn_hidden_dim=32"]
    res = run(
        train_cmd("--task", STUDENT, *SMALL, *STUDENT_NETS, *rnn, "--max_iterations", "3", "--log_root", log_root)
    )
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = next(Path(log_root, "go2_flat_distillation").iterdir())
    assert len(behavior_losses(run_dir)) == 3
    again = run(
        train_cmd(
            "--task", STUDENT, *SMALL, *STUDENT_NETS, *rnn, "--max_iterations", "2", "--log_root", log_root, "--resume"
        )
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "at iteration 3" in again.stdout and json.loads((run_dir / "summary.json").read_text())["iterations"] == 5


def test_a_teacher_may_have_a_zero_init_std_and_a_student_may_not():
    # Isaac Lab's distillation configs give the teacher init_std 0: it acts by its mean, its std is its checkpoint's.
    from robolab.config import ConfigError, agent_dict, compose

    task = "RoboLab-Velocity-Flat-Go2-Distillation-v0"
    agent = agent_dict(compose(task, ["agent.teacher.distribution_cfg.init_std=0.0"]))
    assert agent["teacher"]["distribution_cfg"]["init_std"] == 0.0
    refused = r"^agent.student.distribution_cfg.init_std=0.0: must be a finite number > 0$"
    with pytest.raises(ConfigError, match=refused):
        agent_dict(compose(task, ["agent.student.distribution_cfg.init_std=0.0"]))
