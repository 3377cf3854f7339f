"""Command-line programs behind ``scripts/``: they parse arguments, call the library and print.

``one_line_errors`` is how every program reports a bad input: one ``error: ...`` line on stderr and exit code 2.
``ROBOLAB_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable

from robolab import distributed

# What a bad input, a bad file or a full or read-only disk raises (robolab's own errors are ValueErrors).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, distributed.DistributedConfigError)


def one_line_errors(program: Callable[[], object], extra: tuple[type[BaseException], ...] = ()) -> int:
    """Run ``program``; a user error becomes one line on stderr and exit code 2 (0 otherwise)."""
    try:
        program()
    except USER_ERRORS + extra as err:
        if os.environ.get("ROBOLAB_DEBUG"):
            raise
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return 2
    finally:
        distributed.shutdown()
    return 0


def check_unknown(parser: argparse.ArgumentParser, rest: list[str]) -> list[str]:
    """``rest`` (what argparse did not know) as Hydra overrides; a ``-flag`` among them is a one-line error naming
    the closest known flag, never a Hydra lexer trace."""
    for arg in rest:
        if arg.startswith("-") and not _is_number(arg):
            flag = arg.split("=", 1)[0]
            known = [o for action in parser._actions for o in action.option_strings]
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]}?" if close else "; see --help"
            raise ValueError(f"unknown flag {flag}{hint} (arguments without -- are Hydra overrides: key=value)")
    return rest


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def bare_resume(argv: list[str]) -> list[str]:
    """Isaac Lab's ``--resume`` takes no value: when a flag or a Hydra override follows it, it means ``latest``
    (argparse would take the override for the run to resume)."""
    out = []
    for i, arg in enumerate(argv):
        out.append(arg)
        following = argv[i + 1] if i + 1 < len(argv) else None
        takes_it = following is not None and ("=" in following or following.startswith("-"))
        if arg == "--resume" and takes_it and not os.path.exists(str(following)):
            out.append("latest")
    return out
