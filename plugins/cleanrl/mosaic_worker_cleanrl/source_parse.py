"""``ast.parse`` for the worker, one parse at a time in the process.

CPython 3.11 keeps the AST constructor's recursion depth in state that all threads share
(python/cpython#106905): two threads inside ``ast.parse`` at once can fail with ``SystemError:
AST constructor recursion depth mismatch``. The worker reads CleanRL's scripts (their imports,
arguments, evaluation modules) from whatever thread asks, for example the conformance suite's
two recordings at once, so every parse of the worker goes through one lock. A parse takes a few
milliseconds; they are rare (describing the worker, validating a config).
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse(source, filename, mode)``, never beside another parse of this module."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)


__all__ = ["parse"]
