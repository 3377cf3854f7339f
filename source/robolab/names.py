"""Choosing joints and bodies by name: regular expressions a config writes, matched in full."""

from __future__ import annotations

import re


def matching_names(names: list[str], patterns: list[str], key: str, what: str) -> list[int]:
    """Indices of ``names`` that fully match one of ``patterns`` (regular expressions); a pattern matching none is
    a one-line error: ``<key>: <pattern> matches none of <what> (<names>)``."""
    for pattern in patterns:
        if not any(re.fullmatch(pattern, name) for name in names):
            raise ValueError(f"{key}: {pattern!r} matches none of {what} ({', '.join(names)})")
    return [i for i, name in enumerate(names) if any(re.fullmatch(p, name) for p in patterns)]
