"""Checkpoint files: atomic writes, safe loads, and finding what to resume from."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from typing import IO, Any

import torch

CHECKPOINT_PATTERN = re.compile(r"^model_(\d+)\.pt$")


def atomic_write(path: str, write: Callable[[IO], None], binary: bool = True) -> None:
    """Write a file so that ``path`` is either the old file or the complete new one.

    ``write`` fills a temporary file in the same directory, which is flushed to disk and only then renamed over
    ``path``; a crash mid-write leaves a stray ``.tmp`` file that ``latest_checkpoint`` never picks.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_atomic(obj: Any, path: str) -> None:
    """``torch.save`` through ``atomic_write``."""
    atomic_write(path, lambda f: torch.save(obj, f))


def load(path: str, map_location: str | torch.device | None = None) -> dict:
    """Load a checkpoint with ``weights_only=True``: tensors and plain containers only, no pickled code."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint {path!r}: no such file")
    return torch.load(path, map_location=map_location, weights_only=True)


def checkpoint_iteration(path: str) -> int:
    match = CHECKPOINT_PATTERN.match(os.path.basename(path))
    if match is None:
        raise ValueError(f"checkpoint {path!r}: expected a file named model_<iteration>.pt")
    return int(match.group(1))


def latest_checkpoint(run_dir: str) -> str | None:
    """The complete ``model_<it>.pt`` with the highest iteration in ``run_dir`` (temporary files ignored)."""
    if not os.path.isdir(run_dir):
        return None
    found = [(int(m.group(1)), name) for name in os.listdir(run_dir) if (m := CHECKPOINT_PATTERN.match(name))]
    return os.path.join(run_dir, max(found)[1]) if found else None


def latest_run(experiment_dir: str, suffix: str = "") -> str | None:
    """The newest run directory (by name, which starts with a sortable timestamp) that holds a checkpoint.

    With ``suffix``, only runs whose name ends with it (``_<run_name>``) are considered.
    """
    if not os.path.isdir(experiment_dir):
        return None
    runs = sorted(
        (
            d
            for d in os.listdir(experiment_dir)
            if os.path.isdir(os.path.join(experiment_dir, d)) and d.endswith(suffix)
        ),
        reverse=True,
    )
    for run in runs:
        if latest_checkpoint(os.path.join(experiment_dir, run)) is not None:
            return os.path.join(experiment_dir, run)
    return None
