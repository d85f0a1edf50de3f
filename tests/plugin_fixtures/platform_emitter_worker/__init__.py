"""An upstream-style worker written the way the platform's own workers are: its factory and
its runtime both import from ``gym_gui.core.worker`` (the runtime uses ``TelemetryEmitter``),
so it runs without the GUI only if the launched process gets the stand-in too."""

from __future__ import annotations


def get_worker_metadata() -> tuple:
    from gym_gui.core.worker import WorkerCapabilities, WorkerMetadata

    return (
        WorkerMetadata(
            "Emitter Worker", "0.1.0", "uses TelemetryEmitter", "someone", "", None, None, "MIT"
        ),
        WorkerCapabilities(
            "emitterworker",
            ("sequential",),
            ("gymnasium",),
            ("discrete",),
            ("vector",),
            1,
            False,
            False,
            False,
            False,
            False,
            None,
            1,
            256,
        ),
    )
