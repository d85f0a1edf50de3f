"""Running workers as child processes: launch preparation, supervision, the SQLite store and
the live view behind ``mosaic run``.

``run_worker`` and ``RunResult`` are loaded on first use, so that importing
``mosaic_sdk.runner.launch`` (the conformance suite does) does not pull in the store::

    from mosaic_sdk.runner import run_worker

    result = run_worker("example", {"episodes": 2}, store="runs.sqlite")
    print(result.status, result.counts)
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "run_worker": "mosaic_sdk.runner.supervisor",
    "RunResult": "mosaic_sdk.runner.supervisor",
    "RunSupervisor": "mosaic_sdk.runner.supervisor",
    "RunStore": "mosaic_sdk.runner.store",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mosaic_sdk.runner' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
