"""Heartbeat: a background thread that writes a ``heartbeat`` lifecycle line every interval."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mosaic_sdk.telemetry.emitter import TelemetryEmitter

DEFAULT_HEARTBEAT_INTERVAL = 30.0


def resident_memory_mb() -> float:
    """Resident set size of this process in MiB (peak RSS where /proc is absent)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource  # the fallback where /proc is missing

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def heartbeat_interval(default: float = DEFAULT_HEARTBEAT_INTERVAL) -> float:
    raw = os.environ.get("MOSAIC_HEARTBEAT_INTERVAL", "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"MOSAIC_HEARTBEAT_INTERVAL={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise ValueError(f"MOSAIC_HEARTBEAT_INTERVAL={raw!r} must be > 0 seconds")
    return value


class Heartbeat:
    """Emit a heartbeat every ``interval`` seconds until stopped (also a context manager)."""

    def __init__(
        self,
        emitter: TelemetryEmitter,
        interval: float | None = None,
        progress: Callable[[], Mapping[str, object]] | None = None,
    ) -> None:
        self.interval = heartbeat_interval() if interval is None else float(interval)
        if self.interval <= 0:
            raise ValueError("heartbeat interval must be > 0 seconds")
        self._emitter = emitter
        self._progress = progress
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cpu = time.process_time()
        self._wall = time.monotonic()
        self.count = 0

    def payload(self) -> dict[str, Any]:
        cpu, wall = time.process_time(), time.monotonic()
        busy = (cpu - self._cpu) / max(wall - self._wall, 1e-9)
        self._cpu, self._wall = cpu, wall
        data: dict[str, Any] = {"episode": None, "step": None}
        data.update(self._progress() if self._progress is not None else {})
        data.update(memory_mb=round(resident_memory_mb(), 2), cpu_percent=round(100.0 * busy, 1))
        data["interval"] = self.interval
        return data

    def beat(self) -> None:
        """Emit one heartbeat now."""
        self._emitter.heartbeat(**self.payload())
        self.count += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except RuntimeError:  # emitter closed under us: the run is over
                return

    def start(self) -> Heartbeat:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mosaic-heartbeat", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
