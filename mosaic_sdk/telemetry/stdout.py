"""Keep a worker's telemetry stream clean of library prints."""

from __future__ import annotations

import io
import os
import sys
from typing import TextIO


def claim_stdout(redirect_to: int | None = None) -> TextIO:
    """Return a line-buffered text stream on the original stdout; redirect fd 1 elsewhere.

    ``redirect_to`` is a file descriptor that receives whatever is printed from now on
    (default: stderr). Call once, early, before libraries cache ``sys.stdout``.
    """
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError, OSError):
        pass
    private = os.dup(1)
    os.set_inheritable(private, False)
    os.dup2(2 if redirect_to is None else redirect_to, 1)
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace", line_buffering=True
    )
    return io.TextIOWrapper(
        io.FileIO(private, "w", closefd=True),
        encoding="utf-8",
        errors="strict",
        newline="\n",
        write_through=False,
    )
