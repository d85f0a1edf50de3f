"""Running workers as child processes, and recording what they print.

Sub-packages: :mod:`~mosaic_sdk.runner.supervision` (the worker process and its lifecycle),
:mod:`~mosaic_sdk.runner.recording` (lines to stored rows and observer plugins),
:mod:`~mosaic_sdk.runner.storage` (the SQLite store) and :mod:`~mosaic_sdk.runner.control`
(a run's control relay, socket and client). At the top: :mod:`~mosaic_sdk.runner.supervisor`
(``run_worker``), the live view, and what the runner says to people::

    from mosaic_sdk.runner import run_worker

    result = run_worker("example", {"episodes": 2}, store="runs.sqlite")
    print(result.status, result.counts)
"""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

# Loaded on first use: the conformance suite imports runner.supervision without the store.
_LAZY = LazyExports(
    __name__,
    {
        "run_worker": "mosaic_sdk.runner.supervisor",
        "RunResult": "mosaic_sdk.runner.supervisor",
        "RunSupervisor": "mosaic_sdk.runner.supervisor",
        "RunStore": "mosaic_sdk.runner.storage.store",
        "start_session": "mosaic_sdk.runner.supervision.session_launch",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

__all__ = _LAZY.all()
