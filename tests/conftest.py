"""Shared fixtures. Tests run on the CPU; distributed tests launch real torchrun process groups with gloo."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from robolab.session import seed_everything
from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "scripts" / "train.py")


@pytest.fixture(autouse=True)
def seeded_rngs():
    """Every test starts from the same global random state, whatever ran before it in its worker: a test that draws
    ``torch.randn`` without a generator sees the same numbers alone, in a file, or under xdist."""
    seed_everything(0)


# Command lines of robolab's training entry points and of the launchers that run them.
TRAINING_COMMAND = re.compile(
    r"scripts/(train|benchmark)\.py|robolab\.cli\.(train|benchmark)|robolab-(train|benchmark)"
    r"|torchrun|torch\.distributed\.run|\b(sbatch|srun|mpirun)\b|docker-compose.* up\b|docker compose.* up\b"
)


@pytest.fixture(autouse=True)
def training_processes_are_marked_slow(request, monkeypatch):
    """A test that starts a training process (one of the commands above that writes a checkpoint under the test's
    temporary folder) must be marked ``slow``: the fast tier (``-m "not slow"``) trains in no other process, and a
    test that forgets the mark fails here instead of slowing that tier down unnoticed. A training entry point that
    stops at a bad flag, before any work, is not one; training inside the test's own process is not either."""
    if request.node.get_closest_marker("slow"):
        yield
        return
    launched: list[str] = []
    popen_init = subprocess.Popen.__init__

    def record(self, args, *more, **kwargs):
        line = str(args if isinstance(args, str | bytes) else " ".join(map(str, args)))
        if TRAINING_COMMAND.search(line):
            launched.append(line)
        popen_init(self, args, *more, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if launched and tmp is not None and next(Path(tmp).rglob("model_*.pt"), None) is not None:
        pytest.fail(f"{request.node.nodeid} trains in another process ({launched[0][:160]}): mark it slow")


def require_launcher(missing: str | None) -> None:
    """Skip a test whose real launcher (Slurm, Open MPI) is absent here, with ``missing`` as the reason; under
    `.ci/run` (ROBOLAB_REQUIRE_LAUNCHERS=1) fail instead, so CI cannot pass without running it."""
    if missing is None:
        return
    if os.environ.get("ROBOLAB_REQUIRE_LAUNCHERS"):
        pytest.fail(missing)
    pytest.skip(missing)


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without launcher variables (a test sets the ones it needs)."""
    drop = (
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "SLURM_",
        "OMPI_COMM_WORLD",
        "PMI_",
        "MPI_LOCAL",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC",
        "ROBOLAB_VERBOSE",  # the tests read the default (quiet) output
        "ROBOLAB_PROGRESS",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONUNBUFFERED"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd: list[str], timeout: float = 300, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or clean_env(), cwd=cwd)


def read_until(proc: subprocess.Popen, text: str) -> str:
    """Lines of ``proc``'s stdout up to the first holding ``text`` (an assertion error if it ends first)."""
    seen = ""
    while text not in seen:
        line = proc.stdout.readline()
        assert line, f"the process ended before printing {text!r}: {seen[-3000:]}"
        seen += line
    return seen


def train_cmd(*args: str) -> list[str]:
    return [sys.executable, TRAIN, *args]


# Small, fast training settings shared by the end-to-end tests.
TINY = [
    "--num_envs",
    "16",
    "env.backend.num_threads=1",
    "agent.num_steps_per_env=8",
    "agent.actor.hidden_dims=[32,32]",
    "agent.critic.hidden_dims=[32,32]",
    "agent.save_interval=1",
    "agent.algorithm.num_mini_batches=2",
    "agent.algorithm.num_learning_epochs=2",
]


@pytest.fixture
def log_root(tmp_path) -> str:
    return str(tmp_path / "logs")


def go2_robot(**changes):
    """The built-in Go2-class robot's config (``go2_robot_cfg``) with ``changes``."""
    return dataclasses.replace(go2_robot_cfg(), **changes)


def go2_servo_robot(**changes):
    """The Go2 with MuJoCo position servos on every joint in place of its DC motors (the backends' own tests: a
    backend steps servos within its physics steps; explicit actuators need the env's loop)."""
    return go2_robot(actuators={}, **changes)


def tiny_runner_cfg(hidden: int = 16, **algorithm) -> dict:
    """A small rsl_rl runner config over the ``policy`` and ``critic`` groups (in-process training tests)."""
    return {
        "num_steps_per_env": 4,
        "save_interval": 100,
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "logger": "tensorboard",
        "run_name": "",
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [hidden],
            "activation": "elu",
            "obs_normalization": True,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
        },
        "critic": {"class_name": "MLPModel", "hidden_dims": [hidden], "activation": "elu", "obs_normalization": True},
        "algorithm": {"class_name": "PPO", "num_learning_epochs": 1, "num_mini_batches": 2, **algorithm},
    }
