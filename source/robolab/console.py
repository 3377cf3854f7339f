"""What robolab's programs print: little by default, everything with ``--verbose``; a bar for long quiet work.

- ``--verbose`` (every program) sets ``ROBOLAB_VERBOSE=1``, so the processes a program starts (torchrun's ranks,
  a sweep's jobs) inherit it. Quiet (the default): one line per training iteration, no network dumps, warp's
  warnings only. Verbose: rsl_rl's per-iteration block, the networks, warp's module loads.
- Progress bars (tqdm, on stderr, rank 0 only) show where a terminal is, or everywhere with ``ROBOLAB_PROGRESS=1``
  (a Slurm job's log, for example); ``ROBOLAB_PROGRESS=0`` hides them.
- MuJoCo's warnings go to Python's ``logging`` (logger ``robolab.mujoco``), not to ``MUJOCO_LOG.TXT`` in the
  working directory: an unstable simulation is already detected, reset and counted by the env
  (``Metrics/diverged_total``), so those are debug messages; any other warning is logged once per kind.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
from collections.abc import Iterator

from robolab import distributed

VERBOSE_ENV = "ROBOLAB_VERBOSE"
ITERATION_LINE = re.compile(r"^\[robolab\] it (\d+)/(\d+) ", re.MULTILINE)
"""The quiet iteration line's start, ``[robolab] it <done>/<total> ``: ``iteration_line`` writes it, a sweep reads
its jobs' progress from it (``robolab.sweep.follow_iterations``)."""
PROGRESS_ENV = "ROBOLAB_PROGRESS"
MUJOCO_LOGGER = "robolab.mujoco"


def verbose() -> bool:
    """Whether ``--verbose`` (or ``ROBOLAB_VERBOSE``) asked for the libraries' full output."""
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def iteration_line(done: int, total: int, parts: list[str]) -> str:
    """The quiet one-line summary of a training iteration: ``[robolab] it <done>/<total> | part | ...``."""
    return " | ".join([f"[robolab] it {done}/{total}", *parts])


def set_verbose(on: bool) -> None:
    """``--verbose``: for this process and the ones it starts."""
    if on:
        os.environ[VERBOSE_ENV] = "1"


@contextlib.contextmanager
def library_chatter() -> Iterator[None]:
    """What a library prints on stdout while it sets itself up (rsl_rl prints both networks), kept back unless
    verbose. Errors still raise; stderr is untouched."""
    if verbose():
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def progress(total: int | None = None, desc: str = "", unit: str = "step", enabled: bool = True, file=None):
    """A tqdm bar with rate and ETA on stderr; a disabled one (its calls do nothing) where it would not be seen or
    is not ``enabled``. It is cleared when it closes: the program prints its result after it."""
    from tqdm import tqdm

    file = file or sys.stderr
    wanted = os.environ.get(PROGRESS_ENV, "")
    if wanted not in ("", "0", "1"):
        raise ValueError(f"{PROGRESS_ENV}={wanted}: must be 0 (no bars), 1 (always) or unset (on a terminal)")
    on_terminal = getattr(file, "isatty", lambda: False)()
    # the launcher's rank (torchrun, Slurm or Open MPI), read as every other part of robolab reads it
    main_rank = distributed.read_context().rank == 0
    shown = enabled and main_rank and (wanted == "1" or (wanted == "" and on_terminal))
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        leave=False,
        file=file,
        disable=not shown,
        dynamic_ncols=True,
        mininterval=0.5,
    )


def progress_over(items, desc: str, unit: str = "step"):
    """``items`` (a sized iterable), counted by a ``progress`` bar."""
    with progress(len(items), desc, unit) as bar:
        for item in items:
            yield item
            bar.update()


def warp_log_level() -> int:
    """warp's log level: its module loads (about 50 lines at start-up) only when verbose."""
    import warp as wp

    return wp.LOG_INFO if verbose() else wp.LOG_WARNING


# "Nan, Inf or huge value in QACC at DOF 0. The simulation is unstable. Time = 0.6050." -> one kind per message
# with its numbers taken out, so a warning repeated at every step is logged once.
_NUMBERS = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?")


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings (``mju_warning``) to ``logging`` instead of ``MUJOCO_LOG.TXT`` and stdout. Process
    wide, and idempotent: every backend and model loader calls it before MuJoCo can warn."""
    import mujoco

    handler = mujoco.get_mju_user_warning()
    if getattr(handler, "__robolab__", False):
        return
    logger = logging.getLogger(MUJOCO_LOGGER)
    seen: set[str] = set()

    def warn(message: str) -> None:
        text = message.strip()
        if "simulation is unstable" in text:  # the env resets and counts the env (robolab.envs.divergence)
            logger.debug("%s", text)
            return
        kind = _NUMBERS.sub("#", text)
        if kind not in seen:
            seen.add(kind)
            logger.warning("MuJoCo: %s", text)

    warn.__robolab__ = True  # type: ignore[attr-defined]
    mujoco.set_mju_user_warning(warn)
