"""Files written whole or not at all: a reader (a resume, TensorBoard, a teammate) never sees half a file."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import unicodedata
from collections.abc import Callable
from typing import IO


def umask() -> int:
    """The process's umask (read without changing it for longer than the call)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


TEMPORARY = re.compile(r"^.+\.[A-Za-z0-9_]{8}\.tmp$")
"""The name ``atomic_write`` gives its temporary file: ``<name>.<8 random characters>.tmp``."""


def remove_stale_temporaries(directory: str) -> list[str]:
    """Delete the temporary files of ``atomic_write`` that a killed process left in ``directory`` (call it only
    while no other process writes there: under the run's lock). Returns their names."""
    if not os.path.isdir(directory):
        return []
    stale = [n for n in os.listdir(directory) if TEMPORARY.match(n) and os.path.isfile(os.path.join(directory, n))]
    for name in stale:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, name))
    return stale


def atomic_write(path: str, write: Callable[[IO], None], binary: bool = True) -> None:
    """Write a file so that ``path`` is either the old file or the complete new one.

    ``write`` fills a temporary file in the same directory, which is flushed to disk and only then renamed over
    ``path``; a crash mid-write leaves a stray ``.tmp`` file that ``latest_checkpoint`` never picks (and the next
    start of the run removes: ``remove_stale_temporaries``). A ``path`` that is a link to a file is written through
    (the file it names is replaced); one that is a directory, a device or a pipe is refused, so ``--output
    /dev/full`` fails instead of replacing the device.
    """
    path = os.path.realpath(path) if os.path.islink(path) else path
    if os.path.lexists(path) and not os.path.isfile(path):
        kind = "a directory" if os.path.isdir(path) else "not a regular file (a device, pipe or socket)"
        raise IsADirectoryError(f"{path!r} is {kind}: give the path of a file to write")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        # mkstemp creates the file 0600; the result should be readable as any file this process writes (teammates,
        # a TensorBoard server), so it gets the mode open() would give it under the process umask.
        os.chmod(tmp, 0o666 & ~umask())
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str, text: str) -> None:
    """``text`` to ``path`` through ``atomic_write``."""

    def write(f) -> None:
        f.write(text)

    atomic_write(path, write, binary=False)


NAME_MAX_BYTES = 255
"""The longest file name most file systems take (ext4, xfs, NFS): a run's directory name must fit."""
TIMESTAMP_LENGTH = len("2026-01-01_00-00-00-99_")
"""What a run directory's name adds to the run name (the counter of same-second runs included)."""


def check_dir_name(key: str, name: str, allow_empty: bool = False) -> None:
    """A run or experiment name is one directory name under the log root: no path separator, not ``.`` or ``..``,
    no control character, short enough for the file system. Anything else (unicode too) is allowed. Raises a
    one-line ``ValueError`` naming ``key``."""
    if not isinstance(name, str):
        raise ValueError(f"{key}={name!r}: must be a string")
    if not name:
        if allow_empty:
            return
        raise ValueError(f"{key}='': must not be empty")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise ValueError(
            f"{key}={name!r}: must be one directory name, without '/' or '\\', not '.' or '..' "
            "(runs stay under --log_root)"
        )
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise ValueError(f"{key}={name!r}: must not contain control characters")
    limit = NAME_MAX_BYTES - (TIMESTAMP_LENGTH if key.endswith("run_name") else 0)
    if len(name.encode()) > limit:
        raise ValueError(f"{key}: {len(name.encode())} bytes long, at most {limit} (the file system's name limit)")
