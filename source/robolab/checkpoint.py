"""Checkpoint files: atomic saves (``robolab.files``), safe loads, their identity, and finding what to resume from."""

from __future__ import annotations

import os
import re
from typing import Any

import torch

from robolab.errors import first_line
from robolab.files import atomic_write

CHECKPOINT_PATTERN = re.compile(r"^model_(\d+)\.pt$")


class CheckpointError(ValueError):
    """A file that is not a usable checkpoint, or one of another run's kind; the message names it and why."""


def save_atomic(obj: Any, path: str) -> None:
    """``torch.save`` through ``atomic_write``."""
    atomic_write(path, lambda f: torch.save(obj, f))


def load(path: str, map_location: str | torch.device | None = None) -> dict:
    """Load a checkpoint with ``weights_only=True``: tensors and plain containers only, no pickled code.

    A truncated file, a file of another format or a pickle with code in it is a ``CheckpointError`` naming the file.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint {path!r}: no such file")
    try:
        loaded = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # zip, unpickling and EOF errors alike
        reason = first_line(err)
        raise CheckpointError(
            f"checkpoint {path!r} is not a readable checkpoint (truncated, another format, or unsafe pickled code): "
            f"{reason[:200]}"
        ) from None
    if not isinstance(loaded, dict):
        raise CheckpointError(f"checkpoint {path!r} holds a {type(loaded).__name__}, not a checkpoint dict")
    return loaded


def check_shapes(model: torch.nn.Module, state: dict[str, torch.Tensor], role: str) -> None:
    """One-line error naming the first tensor of ``model`` that ``state`` lacks or holds in another shape."""
    for name, tensor in model.state_dict().items():
        if name not in state:
            raise CheckpointError(f"{role} checkpoint has no tensor {name!r} (a different model architecture?)")
        if tuple(state[name].shape) != tuple(tensor.shape):
            raise CheckpointError(
                f"{role} checkpoint tensor {name!r} has shape {tuple(state[name].shape)}, the {role} model expects "
                f"{tuple(tensor.shape)} (observation group or hidden_dims differ from the run that trained it)"
            )


def check_identity(path: str, saved: dict | None, expected: dict, role: str = "checkpoint") -> None:
    """Refuse ``path`` when its saved identity differs from ``expected`` in any key both have, naming what differs.

    An identity (``OnPolicyRunner.identity``) names the task, runner, algorithm and the shapes of the observation
    groups and of every model tensor. Checkpoints written before robolab saved one are checked by their tensor
    shapes only, when they are loaded.
    """
    if saved is None:
        return
    differences = [d for key in expected if key in saved for d in _differences(key, saved[key], expected[key])]
    if differences:
        shown = "; ".join(differences[:4]) + (f"; +{len(differences) - 4} more" if len(differences) > 4 else "")
        raise CheckpointError(f"{role} {path!r} is of another kind of run: {shown}")


def _differences(key: str, saved: Any, expected: Any) -> list[str]:
    if isinstance(saved, dict) and isinstance(expected, dict):
        return [
            d
            for sub in sorted(set(saved) | set(expected), key=str)
            for d in _differences(f"{key}.{sub}", saved.get(sub, "<none>"), expected.get(sub, "<none>"))
        ]
    return [] if saved == expected else [f"{key} is {saved!r} in the file, {expected!r} here"]


def checkpoint_iteration(path: str) -> int:
    """The iteration of a ``model_<iteration>.pt`` path (a one-line error for any other name)."""
    match = CHECKPOINT_PATTERN.match(os.path.basename(path))
    if match is None:
        raise ValueError(f"checkpoint {path!r}: expected a file named model_<iteration>.pt")
    return int(match.group(1))


def all_checkpoints(run_dir: str, pattern: str | None = None) -> list[str]:
    """Every complete ``model_<it>.pt`` in ``run_dir``, in iteration order (temporary files ignored).

    With ``pattern`` (a regular expression, matched from the start of the name as Isaac Lab's ``--checkpoint``),
    only the checkpoints whose file name it matches.
    """
    if not os.path.isdir(run_dir):
        return []
    regex = _compile(pattern, "--checkpoint")
    found = sorted(
        (int(m.group(1)), name)
        for name in os.listdir(run_dir)
        if (m := CHECKPOINT_PATTERN.match(name)) and (regex is None or regex.match(name))
    )
    return [os.path.join(run_dir, name) for _, name in found]


def latest_checkpoint(run_dir: str, pattern: str | None = None) -> str | None:
    """The complete ``model_<it>.pt`` with the highest iteration in ``run_dir`` (``pattern`` as in
    ``all_checkpoints``)."""
    found = all_checkpoints(run_dir, pattern)
    return found[-1] if found else None


RUN_DIR_PATTERN = re.compile(r"^(?P<time>\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})(?:-(?P<k>\d+))?(?:_(?P<name>.+))?$")
"""A run directory's name: ``<timestamp>[-<k>][_<run_name>]`` (``-<k>`` tells apart runs started in one second)."""


def run_name_of(directory: str) -> str | None:
    """The run name in a run directory's name ('' for a run without one); None for a name that is not a run's."""
    match = RUN_DIR_PATTERN.match(os.path.basename(directory))
    return None if match is None else match.group("name") or ""


def _run_order(directory: str) -> tuple[str, int]:
    """Oldest first: by timestamp, then by the counter of runs started in the same second."""
    match = RUN_DIR_PATTERN.match(directory)
    return (match.group("time"), int(match.group("k") or 0)) if match else (directory, 0)


def latest_run(
    experiment_dir: str,
    run_name: str | None = None,
    pattern: str | None = None,
    checkpoint_pattern: str | None = None,
) -> str | None:
    """The newest run directory (by its name's timestamp) that holds a checkpoint.

    With ``run_name``, only runs of exactly that name (the part after the timestamp, not a suffix: ``lr_x`` is not
    ``x``); with ``pattern`` (a regular expression, matched from the start of the name as Isaac Lab's
    ``--load_run``), only those it matches; with ``checkpoint_pattern``, only runs holding a checkpoint it matches.
    """
    if not os.path.isdir(experiment_dir):
        return None
    regex = _compile(pattern, "--load_run")
    runs = sorted(
        (
            d
            for d in os.listdir(experiment_dir)
            if os.path.isdir(os.path.join(experiment_dir, d))
            and (run_name is None or run_name_of(d) == run_name)
            and (regex is None or regex.match(d))
        ),
        key=_run_order,
        reverse=True,
    )
    for run in runs:
        if latest_checkpoint(os.path.join(experiment_dir, run), checkpoint_pattern) is not None:
            return os.path.join(experiment_dir, run)
    return None


def _compile(pattern: str | None, flag: str) -> re.Pattern | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ValueError(f"{flag}={pattern!r}: not a regular expression ({err})") from None
