"""Runs on disk: choosing a new run directory or the one to resume, finding a teacher, rank 0's console copy.

Runs live where Isaac Lab's tools look for them: ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from robolab import checkpoint


@dataclass
class RunPlan:
    """Where this run writes and what it resumes from; decided on rank 0 and broadcast.

    A new run's directory is only named here (``experiment_dir``, ``run_name``); ``create_run_dir`` makes it once
    everything else has been validated and loaded, so a failed start leaves no trace on disk.
    """

    run_dir: str | None
    resume_checkpoint: str | None
    experiment_dir: str = ""
    run_name: str = ""


def create_run_dir(plan: RunPlan) -> str:
    """The run directory of ``plan``: the resumed one, or a new one created now. Runs on rank 0 only."""
    return plan.run_dir if plan.run_dir is not None else new_run_dir(plan.experiment_dir, plan.run_name)


def plan_run(log_root: str, experiment: str, run_name: str, resume: str | None) -> RunPlan:
    """Pick the run directory: the one being resumed, or a new timestamped one (named, not created). Rank 0 only.

    ``latest`` and ``auto`` take the newest run of the experiment that holds a checkpoint (of those named
    ``*_<run_name>`` when a run name is set, so a restarted job finds its own run); ``auto`` starts a new run
    when there is none, which makes it the setting for jobs that a launcher may restart.
    """
    experiment_dir = os.path.join(log_root, experiment)
    if resume in ("latest", "auto"):
        run_dir = checkpoint.latest_run(experiment_dir, suffix=f"_{run_name}" if run_name else "")
        if run_dir is not None:
            return RunPlan(run_dir, checkpoint.latest_checkpoint(run_dir))
        if resume == "latest":
            raise FileNotFoundError(f"--resume: no run with a checkpoint under {experiment_dir!r}")
    elif resume is not None:
        if os.path.isfile(resume):
            checkpoint.checkpoint_iteration(resume)  # validates the name
            return RunPlan(os.path.dirname(os.path.abspath(resume)), os.path.abspath(resume))
        found = checkpoint.latest_checkpoint(resume)
        if found is None:
            raise FileNotFoundError(f"--resume={resume!r}: not a checkpoint file nor a run directory with one")
        return RunPlan(os.path.abspath(resume), found)
    return RunPlan(None, None, experiment_dir, run_name)


def new_run_dir(experiment_dir: str, run_name: str) -> str:
    """Create ``<experiment_dir>/<timestamp>[_<run_name>]``; two runs started in the same second get distinct ones."""
    name = time.strftime("%Y-%m-%d_%H-%M-%S") + (f"_{run_name}" if run_name else "")
    os.makedirs(experiment_dir, exist_ok=True)
    for attempt in range(100):
        run_dir = os.path.join(experiment_dir, name if attempt == 0 else f"{name}-{attempt}")
        try:
            os.mkdir(run_dir)
            return os.path.abspath(run_dir)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a new run directory for {name!r} under {experiment_dir!r}")


def find_teacher(agent: dict, log_root: str) -> str:
    """The teacher file of a distillation run: given, or the newest checkpoint of the teacher experiment."""
    given = agent.get("teacher_checkpoint")
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"--teacher_checkpoint={given!r}: no such file")
        return given
    experiment_dir = os.path.join(log_root, agent.get("teacher_experiment") or "")
    run_dir = checkpoint.latest_run(experiment_dir)
    found = checkpoint.latest_checkpoint(run_dir) if run_dir else None
    if found is None:
        raise FileNotFoundError(
            f"no teacher checkpoint: none under {experiment_dir!r}; "
            "train the teacher task first or pass --teacher_checkpoint"
        )
    return found


class ConsoleLog:
    """Copy of everything rank 0 prints, appended to ``<run>/console.log`` (a resumed run continues it)."""

    def __init__(self, path: str, stream):
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 (open for the run; closed by the session)
        self.stream = stream

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def saved_params(run_dir: str) -> tuple[dict | None, dict | None]:
    """(env, agent) configs a run saved in ``params/``, as plain dicts; None where a file is missing."""
    from omegaconf import OmegaConf

    found = []
    for name in ("env.yaml", "agent.yaml"):
        path = os.path.join(run_dir, "params", name)
        found.append(OmegaConf.to_container(OmegaConf.load(path)) if os.path.isfile(path) else None)
    return found[0], found[1]


def write_text_atomic(path: str, text: str) -> None:
    def write(f) -> None:
        f.write(text)

    checkpoint.atomic_write(path, write, binary=False)
