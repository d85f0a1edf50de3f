"""Running workers as child processes, and recording what they print."""

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
