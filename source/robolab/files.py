"""Files written whole or not at all: a reader (a resume, TensorBoard, a teammate) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import IO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str, write: Callable[[IO], None], binary: bool = True) -> None:
    """Write a file so that ``path`` is either the old file or the complete new one.

    ``write`` fills a temporary file in the same directory, which is flushed to disk and only then renamed over
    ``path``; a crash mid-write leaves a stray ``.tmp`` file that ``latest_checkpoint`` never picks.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        # mkstemp creates the file 0600; the result should be readable as any file this process writes (teammates,
        # a TensorBoard server), so it gets the mode open() would give it under the process umask.
        os.chmod(tmp, 0o666 & ~_umask())
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
