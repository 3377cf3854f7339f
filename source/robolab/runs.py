"""Runs on disk: choosing a new run directory or the one to resume, finding a teacher, rank 0's console copy.

Runs live where Isaac Lab's tools look for them: ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import re
import socket
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


class RunBusyError(ValueError):
    """Another live job holds the run directory (or, under ``--resume auto``, the run name)."""


class RunLock:
    """An exclusive ``flock`` on a lock file, held until ``release`` or the process's end: the kernel drops it when
    the holder dies (``kill -9``, a lost node), so a restarted job takes it again, while a second live job is refused
    in one line naming the holder. The file keeps the holder's description (pid, host, start, command)."""

    def __init__(self, path: str, what: str):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 & ~files.umask())
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 4096).decode(errors="replace").strip() or "a process that wrote no details"
            os.close(self.fd)
            raise RunBusyError(
                f"{what} is in use by another job ({holder}): wait for it to end, or train another run "
                "(another --run_name)"
            ) from None
        started = datetime.datetime.now().isoformat(timespec="seconds")
        holder = f"pid {os.getpid()} on {socket.gethostname()} since {started}: {' '.join(sys.argv)}"
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, holder.encode()[:4000], 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = -1


RUN_LOCK = ".lock"
"""The lock file inside a run directory."""


def claim_run_dir(plan: RunPlan, closer: contextlib.ExitStack) -> str:
    """The run directory of ``plan`` made this job's, on rank 0: a new one created now, or the resumed one; locked
    for the job's life (``closer`` releases it) and cleared of the temporary files a killed save left.

    ``--resume auto --run_name x`` names a job, so the name is locked first (in the experiment's directory): one live
    job per name, whether or not it has a run yet; two starts of one job would otherwise each make a run. Whatever
    this made and a refusal left empty is removed: a failed start leaves the log root as it was.
    """
    made = _make_dirs(plan.experiment_dir if plan.run_dir is None or plan.restart else "")
    try:
        if plan.restart and plan.run_name and plan.experiment_dir:
            name_lock = RunLock(
                os.path.join(plan.experiment_dir, f".{plan.run_name}.lock"),
                f"run name {plan.run_name!r} of {plan.experiment_dir!r}",
            )
            closer.callback(name_lock.release)
        if plan.run_dir is None:
            try:
                os.mkdir(plan.planned_dir)
                run_dir = os.path.abspath(plan.planned_dir)
            except FileExistsError:  # another run took the name since planning
                run_dir = new_run_dir(plan.experiment_dir, plan.run_name)
        else:
            run_dir = plan.run_dir
        lock = RunLock(os.path.join(run_dir, RUN_LOCK), f"run directory {run_dir!r}")
    except OSError:
        for directory in reversed(made):
            with contextlib.suppress(OSError):
                for name in os.listdir(directory):
                    if name.endswith(".lock"):
                        os.unlink(os.path.join(directory, name))
                os.rmdir(directory)
        raise
    closer.callback(lock.release)
    files.remove_stale_temporaries(run_dir)
    files.remove_stale_temporaries(os.path.join(run_dir, "params"))
    return run_dir


def _make_dirs(path: str) -> list[str]:
    """Create ``path`` and its missing parents; the ones created, outermost first."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        os.mkdir(directory)
    return list(reversed(missing))


def new_run_plan(experiment_dir: str, run_name: str) -> RunPlan:
    """A plan for a new run in ``experiment_dir`` named ``run_name`` (its directory made when training starts)."""
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

    ``latest`` and ``auto`` take the newest run of the experiment that holds a checkpoint (of those whose run name is
    exactly ``run_name`` when one is set, so a restarted job finds its own run; of those ``load_run`` matches when
    given); ``auto`` starts a new run when there is none, which makes it the setting for jobs that a launcher
    may restart. ``load_run`` or ``checkpoint_pattern`` alone mean ``latest`` (Isaac Lab's selection flags).
    """
    experiment_dir = os.path.join(log_root, experiment)
    if resume is None and (load_run or checkpoint_pattern):
        resume = "latest"
    restart = resume == "auto" or (resume is not None and launcher_restart)
    name = run_name if run_name and not load_run else None  # a job's runs, by their exact name
    if resume == "auto":
        run_dir = checkpoint.latest_run(experiment_dir, name, load_run, checkpoint_pattern)
        if run_dir is None:  # the job's first start (restart: its run name is locked for the job's life)
            return dataclasses.replace(new_run_plan(experiment_dir, run_name), restart=True)
        found = checkpoint.latest_checkpoint(run_dir, checkpoint_pattern)
        return RunPlan(run_dir, found, experiment_dir, run_name, restart=True)
    if resume == "latest":
        found = select_checkpoint(experiment_dir, load_run, checkpoint_pattern, name)
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
    experiment_dir: str,
    load_run: str | None = None,
    checkpoint_pattern: str | None = None,
    run_name: str | None = None,
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
        run_dir = checkpoint.latest_run(experiment_dir, run_name, load_run, checkpoint_pattern)
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
    """``<experiment_dir>/<timestamp>[_<run_name>]``, with ``-<k>`` after the timestamp when that name is taken (the
    run name stays the part after the first ``_``, so it is found again exactly)."""
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    tail = f"_{run_name}" if run_name else ""
    for attempt in range(100):
        run_dir = os.path.join(experiment_dir, f"{stamp}{tail}" if attempt == 0 else f"{stamp}-{attempt}{tail}")
        if not os.path.exists(run_dir):
            return os.path.abspath(run_dir)
    raise FileExistsError(f"no free run directory name for {stamp}{tail!r} under {experiment_dir!r}")


def find_teacher(agent: dict, log_root: str) -> str:
    """The teacher file of a distillation run: given, or the newest checkpoint of the teacher experiment."""
    given, experiment = agent.get("teacher_checkpoint"), agent.get("teacher_experiment")
    return _given_or_newest(given, experiment, log_root, "teacher", "--teacher_checkpoint")


def find_init_policy(agent: dict, log_root: str) -> str | None:
    """The checkpoint a PPO run's policy starts from: given, the newest of ``init_policy_experiment``, or None."""
    given, experiment = agent.get("init_policy"), agent.get("init_policy_experiment")
    if not given and not experiment:
        return None
    return _given_or_newest(given, experiment, log_root, "init_policy", "--init_policy")


def _given_or_newest(given: str | None, experiment: str | None, log_root: str, role: str, flag: str) -> str:
    """``given`` (passed as ``flag``), checked to exist, else the newest checkpoint of ``experiment``."""
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"{flag}={given!r}: no such file")
        return given
    experiment_dir = os.path.join(log_root, experiment or "")
    try:
        return select_checkpoint(experiment_dir)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no {role} checkpoint: none under {experiment_dir!r}; train that experiment first or pass {flag}"
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
    """(env, agent) configs a run saved in ``params/``, as plain dicts; None where a file is missing. A file that is
    not a YAML mapping is a one-line ``ValueError`` naming it."""
    from omegaconf import OmegaConf

    found: list[dict | None] = []
    for name in ("env.yaml", "agent.yaml"):
        path = os.path.join(run_dir, "params", name)
        if not os.path.isfile(path):
            found.append(None)
            continue
        try:
            data = OmegaConf.to_container(OmegaConf.load(path))
        except Exception as err:  # YAML syntax, encoding, interpolation errors alike
            raise ValueError(f"{path}: not a readable YAML file ({' '.join(str(err).split())[:200]})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of settings, found a {type(data).__name__}")
        found.append(data)
    return found[0], found[1]


NAME_KEYS = ("class_name", "runner_class_name", "func", "builder")
"""Keys whose value names code to import (``module:attr``, ``module.attr`` or a bare name robolab resolves)."""
_REFERENCE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_][\w.]*$")
ISAACLAB_ROOTS = ("isaaclab", "isaaclab_tasks", "isaaclab_rl", "isaaclab_assets", "isaaclab_mimic", "isaaclab_contrib")


def trusted_roots() -> set[str]:
    """The top-level packages a run directory's files may name code from: robolab, rsl_rl, Isaac Lab, and the task
    packages installed or listed (``robolab.tasks`` / ``isaaclab.tasks`` entry points, ``$ROBOLAB_TASK_PACKAGES``)."""
    import importlib.metadata

    from robolab.tasks.registry import ISAACLAB_TASKS_GROUP, PACKAGES_VARIABLE, TASKS_GROUP

    roots = {"robolab", "rsl_rl", *ISAACLAB_ROOTS}
    for group in (TASKS_GROUP, ISAACLAB_TASKS_GROUP):
        roots.update(ep.value.split(":")[0].split(".")[0] for ep in importlib.metadata.entry_points(group=group))
    roots.update(p.strip().split(".")[0] for p in os.environ.get(PACKAGES_VARIABLE, "").split(",") if p.strip())
    return roots


def check_saved_names(
    data: dict | None, section: str, source: str, overridden: set[str] | frozenset[str] = frozenset()
) -> None:
    """Refuse a run directory's config that names code outside ``trusted_roots`` (a checkpoint is loaded with
    ``weights_only=True``; the YAML beside it must not be a way around that). ``overridden``: the dotted keys the
    command line sets, whose saved values are never used. One line naming the file, the key and the way out."""
    if data is None:
        return
    roots = trusted_roots()

    def walk(node, path: str) -> None:
        if any(path == key or path.startswith(f"{key}.") for key in overridden):
            return
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}.{i}")
        elif isinstance(node, str) and (path.rsplit(".", 1)[-1] in NAME_KEYS or _REFERENCE.match(node)):
            module = node.split(":")[0] if ":" in node else node.rsplit(".", 1)[0] if "." in node else ""
            if module and module.split(".")[0] not in roots:
                raise ValueError(
                    f"{source}: {path}={node!r} names code outside robolab, rsl_rl, Isaac Lab and the installed task "
                    f"packages; a run directory's files do not choose code to import (to use it, give {path}=... on "
                    "the command line)"
                )

    walk(data, section)


SESSIONS = "sessions.jsonl"
"""One JSON line per session that trained into a run (its first start, each resume): what each one ran."""


def write_run_files(run_dir: str, env: dict, agent: dict, session: dict, closer: contextlib.ExitStack) -> None:
    """Rank 0's copy of the console, the run's configs and this session's record.

    ``params/env.yaml`` and ``params/agent.yaml`` describe the run as it was started and are written once; a resume
    leaves them as they are and appends its own record to ``sessions.jsonl`` (when, where, the command, the
    iterations, and the settings it changed against ``params/``), so no session erases what an earlier one wrote.
    """
    from robolab.config import to_yaml

    console = ConsoleLog(os.path.join(run_dir, "console.log"), sys.stdout)
    sys.stdout = console
    closer.callback(_restore_stdout, console)
    saved_env, saved_agent = _read_params(run_dir)
    for name, saved, current in (("env", saved_env, env), ("agent", saved_agent, agent)):
        if saved is None:
            files.write_text_atomic(os.path.join(run_dir, "params", f"{name}.yaml"), to_yaml(current))
        else:
            session.setdefault("changed", {}).update(
                {f"{name}.{k}": v for k, v in _changes(saved, _plain_data(current)).items()}
            )
    append_session(run_dir, session)
    print(f"[robolab] run directory: {run_dir}")


def append_session(run_dir: str, record: dict) -> None:
    """One line appended to ``sessions.jsonl`` (a single ``O_APPEND`` write: whole or not at all)."""
    line = (json.dumps(record, default=str) + "\n").encode()
    fd = os.open(os.path.join(run_dir, SESSIONS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666 & ~files.umask())
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def session_record(plan: RunPlan, world_size: int, start: int, final: int) -> dict:
    """What ``sessions.jsonl`` keeps of this session (``write_run_files`` adds the changed settings)."""
    return {
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "command": sys.argv,
        "world_size": world_size,
        "resumed_from": plan.resume_checkpoint,
        "start_iteration": start,
        "final_iteration": final,
    }


def _read_params(run_dir: str) -> tuple[dict | None, dict | None]:
    """The run's ``params/*.yaml`` as written (None where missing or unreadable: then it is written anew)."""
    try:
        return saved_params(run_dir)
    except ValueError:
        return None, None


def _plain_data(config) -> dict:
    from omegaconf import OmegaConf

    from robolab.config import to_yaml

    data = OmegaConf.to_container(OmegaConf.create(to_yaml(config)))
    assert isinstance(data, dict)
    return data


def _changes(old: dict, new: dict, prefix: str = "") -> dict[str, list]:
    """Dotted keys whose value differs between two nested dicts: ``{key: [old, new]}``."""
    out: dict[str, list] = {}
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.update(_changes(a, b, f"{prefix}{key}."))
        elif a != b:
            out[f"{prefix}{key}"] = [a, b]
    return out


def _restore_stdout(console: ConsoleLog) -> None:
    console.file.close()
    if sys.stdout is console:
        sys.stdout = console.stream
