"""Command-line programs behind ``scripts/``: they parse arguments, call the library and print.

``one_line_errors`` is how every program reports a bad input: one ``error: ...`` line on stderr and exit code 2.
``ROBOLAB_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

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
