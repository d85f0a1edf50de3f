"""What a worker's run function gets: :class:`RunContext` (its config, emitter, run directory,
cancellation and control channel)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.control.channel import ControlChannel
from mosaic_sdk.telemetry.emitter import TelemetryEmitter


class RunContext:
    """What a worker's run function gets."""

    def __init__(
        self,
        config: WorkerConfig,
        emitter: TelemetryEmitter,
        run_dir: Path,
        worker_id: str | None,
        verbose: int,
    ) -> None:
        self.config = config
        self.emitter = emitter
        self.run_dir = run_dir
        self.worker_id = worker_id
        self.verbose = verbose
        self.cancel = threading.Event()
        self.cancel_signal: int | None = None
        #: Why the run was cancelled when no signal did it (e.g. "stop command").
        self.cancel_reason: str | None = None
        #: The control channel (``worker_main`` sets it; None for a hand-made context).
        self.control: ControlChannel | None = None

    @property
    def cancelled(self) -> bool:
        """True when the run must stop. Also the loop's control safe point: blocks while the
        run is paused and runs requested checkpoints (call it from the loop's thread)."""
        if self.control is not None:
            return self.control.safe_point()
        return self.cancel.is_set()

    @property
    def stop_reason(self) -> str:
        """Why the run is stopping, for ``run_cancelled(reason=...)``: ``"stop command"``, the
        signal's name (``"SIGTERM"``, ``"SIGINT"``), else ``"cancelled"``."""
        if self.cancel_reason:
            return self.cancel_reason
        if self.cancel_signal:
            return signal.Signals(self.cancel_signal).name
        return "cancelled"

    def log(self, message: str) -> None:
        """A human-readable message on stderr (never on the telemetry stream)."""
        print(message, file=sys.stderr, flush=True)
