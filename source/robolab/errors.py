"""How robolab turns an exception from elsewhere (Hydra, MuJoCo, torch, Isaac Lab) into part of a one-line error."""

from __future__ import annotations


def first_line(err: BaseException) -> str:
    """The first non-empty line of ``err``'s message, or its type's name when it has none."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def all_lines(err: BaseException) -> str:
    """Every non-empty line of ``err``'s message joined into one (messages that put the reason on a later line)."""
    return "; ".join(line.strip() for line in str(err).strip().splitlines() if line.strip()) or type(err).__name__
