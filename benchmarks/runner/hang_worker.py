"""A worker that writes a few lines and then hangs (alive, silent), for the stall benchmark.

Registered through ``MOSAIC_PLUGINS=hang=hang_worker:HangWorker`` with this directory on
``PYTHONPATH``; its child is this file run as a script. Config: ``lines`` (step lines before
the hang), ``heartbeat_interval`` (when set, one heartbeat of the SDK's ``Heartbeat``, which
declares that interval, is the last line). The last line's ``ts_unix_ns`` is when it was
written: the benchmark measures from there.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pydantic import Field

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata


class HangConfig(WorkerConfig):
    lines: int = Field(10, ge=0)
    heartbeat_interval: float | None = Field(None, gt=0)


class HangWorker:
    @hookimpl
    def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        return WorkerMetadata(name="Hang", version="1.0"), WorkerCapabilities(worker_type="hang")

    @hookimpl
    def mosaic_worker_config_model(self) -> type[WorkerConfig]:
        return HangConfig

    @hookimpl
    def mosaic_worker_launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        return LaunchCommand(argv=(sys.executable, __file__, str(config_path)))


def hang(run_id: str, lines: int, interval: float | None) -> None:
    from mosaic_sdk.telemetry import Heartbeat, TelemetryEmitter

    em = TelemetryEmitter(run_id, sys.stdout, flush_interval=0)
    em.run_started(worker_type="hang")
    for i in range(lines):
        em.step(0, i, 1.0)
    if interval is not None:
        Heartbeat(em, interval=interval).beat()
    em.flush()
    time.sleep(600)  # hung: SIGTERM ends it


if __name__ == "__main__":
    cfg = json.loads(Path(sys.argv[1]).read_text())
    hang(cfg["run_id"], int(cfg.get("lines", 10)), cfg.get("heartbeat_interval"))
