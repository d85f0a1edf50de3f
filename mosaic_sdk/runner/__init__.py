"""Running workers as child processes: launch preparation, supervision, the SQLite store and
the live view behind ``mosaic run``, and :mod:`~mosaic_sdk.runner.recorder`, which records the
output of every run (``mosaic run``'s, and each sweep trial's, Ray trials included) into the
store and hands it to the plugins.

``run_worker`` and ``RunResult`` are loaded on first use, so that importing
``mosaic_sdk.runner.launch`` (the conformance suite does) does not pull in the store::

    from mosaic_sdk.runner import run_worker

    result = run_worker("example", {"episodes": 2}, store="runs.sqlite")
    print(result.status, result.counts)
"""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

_LAZY = LazyExports(
    __name__,
    {
        "run_worker": "mosaic_sdk.runner.supervisor",
        "RunResult": "mosaic_sdk.runner.supervisor",
        "RunSupervisor": "mosaic_sdk.runner.supervisor",
        "RunStore": "mosaic_sdk.runner.store",
        "start_session": "mosaic_sdk.runner.session_launch",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

__all__ = _LAZY.all()
