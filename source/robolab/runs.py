"""Runs on disk: choosing a new run directory or the one to resume, finding a teacher, rank 0's console copy.

Runs live where Isaac Lab's tools look for them: ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

from robolab import checkpoint, files


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
    planned_dir: str = ""
    """A new run's directory, named at planning (Isaac Lab's video recorder is pointed at it before it exists)."""
    restart: bool = False
    """The resume continues an interrupted job (``--resume auto``, or a launcher's restart): it keeps the final
    iteration the job planned, whatever ``--max_iterations`` says."""


def create_run_dir(plan: RunPlan) -> str:
    """The run directory of ``plan``: the resumed one, or a new one created now. Runs on rank 0 only."""
    if plan.run_dir is not None:
        return plan.run_dir
    try:
        os.makedirs(plan.planned_dir)
        return os.path.abspath(plan.planned_dir)
    except FileExistsError:  # another run took the name since planning
        return new_run_dir(plan.experiment_dir, plan.run_name)


def new_run_plan(experiment_dir: str, run_name: str) -> RunPlan:
    return RunPlan(None, None, experiment_dir, run_name, planned_dir=_free_run_dir(experiment_dir, run_name))


def plan_run(
    log_root: str,
    experiment: str,
    run_name: str,
    resume: str | None,
    load_run: str | None = None,
    checkpoint_pattern: str | None = None,
    launcher_restart: bool = False,
) -> RunPlan:
    """Pick the run directory: the one being resumed, or a new timestamped one (named, not created). Rank 0 only.

    ``latest`` and ``auto`` take the newest run of the experiment that holds a checkpoint (of those named
    ``*_<run_name>`` when a run name is set, so a restarted job finds its own run; of those ``load_run`` matches
    when given); ``auto`` starts a new run when there is none, which makes it the setting for jobs that a launcher
    may restart. ``load_run`` or ``checkpoint_pattern`` alone mean ``latest`` (Isaac Lab's selection flags).
    """
    experiment_dir = os.path.join(log_root, experiment)
    if resume is None and (load_run or checkpoint_pattern):
        resume = "latest"
    restart = resume == "auto" or (resume is not None and launcher_restart)
    suffix = f"_{run_name}" if run_name and not load_run else ""
    if resume == "auto":
        run_dir = checkpoint.latest_run(experiment_dir, suffix, load_run, checkpoint_pattern)
        if run_dir is None:
            return new_run_plan(experiment_dir, run_name)
        found = checkpoint.latest_checkpoint(run_dir, checkpoint_pattern)
        return RunPlan(run_dir, found, restart=True)
    if resume == "latest":
        found = select_checkpoint(experiment_dir, load_run, checkpoint_pattern, suffix)
        return RunPlan(os.path.dirname(found), found, restart=restart)
    if resume is not None:
        if os.path.isfile(resume):
            checkpoint.checkpoint_iteration(resume)  # validates the name
            return RunPlan(os.path.dirname(os.path.abspath(resume)), os.path.abspath(resume), restart=restart)
        found = checkpoint.latest_checkpoint(resume, checkpoint_pattern)
        if found is None:
            raise FileNotFoundError(f"--resume={resume!r}: not a checkpoint file nor a run directory with one")
        return RunPlan(os.path.abspath(resume), os.path.abspath(found), restart=restart)
    return new_run_plan(experiment_dir, run_name)


def select_checkpoint(
    experiment_dir: str, load_run: str | None = None, checkpoint_pattern: str | None = None, suffix: str = ""
) -> str:
    """Isaac Lab's checkpoint selection, for ``train.py --resume`` and ``play.py`` alike.

    ``checkpoint_pattern`` naming an existing file is that file; ``load_run`` naming an existing directory is that
    run. Otherwise both are regular expressions matched from the start of the name (``--load_run 2026-11-.*``,
    ``--checkpoint model_1.*.pt``): the newest matching run that holds a matching checkpoint, and in it the matching
    checkpoint with the highest iteration. Unset, they match every run and every ``model_<it>.pt``.
    """
    if checkpoint_pattern and os.path.isfile(checkpoint_pattern):
        checkpoint.checkpoint_iteration(checkpoint_pattern)  # validates the name
        return os.path.abspath(checkpoint_pattern)
    if load_run and os.path.isdir(load_run):
        run_dir: str | None = load_run
    else:
        run_dir = checkpoint.latest_run(experiment_dir, suffix, load_run, checkpoint_pattern)
    found = checkpoint.latest_checkpoint(run_dir, checkpoint_pattern) if run_dir else None
    if found is None:
        where = run_dir or experiment_dir
        conditions = [f"--load_run={load_run!r}"] if load_run and not run_dir else []
        conditions += [f"--checkpoint={checkpoint_pattern!r}"] if checkpoint_pattern else []
        matching = f" matching {' and '.join(conditions)}" if conditions else ""
        raise FileNotFoundError(f"no checkpoint{matching} under {where!r} (train first, or pass --checkpoint FILE)")
    return os.path.abspath(found)


@dataclass
class Schedule:
    """Which iterations this session trains: ``start`` (the next one) up to ``final`` (exclusive)."""

    start: int
    final: int
    reason: str

    def describe(self) -> str:
        if self.start == 0:
            return f"new run: training iterations 0..{self.final - 1} ({self.reason})"
        if self.start >= self.final:
            return f"resumed at iteration {self.start}: the run already reached its final iteration {self.final}"
        return f"resuming at iteration {self.start}, training until {self.final} ({self.reason})"


def plan_schedule(start: int, restart: bool, recorded_final: int | None, flag: int | None, configured: int) -> Schedule:
    """The final iteration of this session; ``--max_iterations`` means what each kind of start needs it to mean.

    - a new run: ``max_iterations`` iterations (the flag, else the agent config);
    - a restart of an interrupted job (``--resume auto``, torchrun's or Slurm's restart): the final iteration the
      job planned, saved in its checkpoints, so a job restarted any number of times still ends where planned;
    - a resume the user asked for (``--resume``, ``--load_run``, ``--checkpoint``): with ``--max_iterations N``,
      N more iterations, as in Isaac Lab; without it, the run's planned final iteration (finish what was started).
    """
    if start == 0:
        final = flag if flag is not None else configured
        return Schedule(0, final, "--max_iterations" if flag is not None else "agent.max_iterations")
    if restart and recorded_final is not None:
        return Schedule(start, recorded_final, "the job's planned final iteration, kept on a restart")
    if flag is not None:
        return Schedule(start, start + flag, f"--max_iterations {flag} more, as in Isaac Lab")
    if recorded_final is not None:
        return Schedule(start, recorded_final, "the run's planned final iteration")
    return Schedule(start, configured, "agent.max_iterations")


def new_run_dir(experiment_dir: str, run_name: str) -> str:
    """Create ``<experiment_dir>/<timestamp>[_<run_name>]``; two runs started in the same second get distinct ones."""
    os.makedirs(experiment_dir, exist_ok=True)
    for _ in range(100):
        run_dir = _free_run_dir(experiment_dir, run_name)
        try:
            os.mkdir(run_dir)
            return os.path.abspath(run_dir)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a new run directory for {run_name!r} under {experiment_dir!r}")


def _free_run_dir(experiment_dir: str, run_name: str) -> str:
    """``<experiment_dir>/<timestamp>[_<run_name>]``, with ``-<k>`` added when that name is taken."""
    name = time.strftime("%Y-%m-%d_%H-%M-%S") + (f"_{run_name}" if run_name else "")
    for attempt in range(100):
        run_dir = os.path.join(experiment_dir, name if attempt == 0 else f"{name}-{attempt}")
        if not os.path.exists(run_dir):
            return os.path.abspath(run_dir)
    raise FileExistsError(f"no free run directory name for {name!r} under {experiment_dir!r}")


def find_teacher(agent: dict, log_root: str) -> str:
    """The teacher file of a distillation run: given, or the newest checkpoint of the teacher experiment."""
    given = agent.get("teacher_checkpoint")
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"--teacher_checkpoint={given!r}: no such file")
        return given
    experiment_dir = os.path.join(log_root, agent.get("teacher_experiment") or "")
    try:
        return select_checkpoint(experiment_dir)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no teacher checkpoint: none under {experiment_dir!r}; "
            "train the teacher task first or pass --teacher_checkpoint"
        ) from None


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


def write_run_files(run_dir: str, env_yaml: str, agent_yaml: str, closer: contextlib.ExitStack) -> None:
    """Rank 0's copy of the console, ``params/env.yaml`` and ``params/agent.yaml``."""
    console = ConsoleLog(os.path.join(run_dir, "console.log"), sys.stdout)
    sys.stdout = console
    closer.callback(_restore_stdout, console)
    files.write_text_atomic(os.path.join(run_dir, "params", "env.yaml"), env_yaml)
    files.write_text_atomic(os.path.join(run_dir, "params", "agent.yaml"), agent_yaml)
    print(f"[robolab] run directory: {run_dir}")


def _restore_stdout(console: ConsoleLog) -> None:
    console.file.close()
    if sys.stdout is console:
        sys.stdout = console.stream
