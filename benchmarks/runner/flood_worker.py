"""A worker that writes step lines as fast as it can, for the runner benchmarks.

Registered through ``MOSAIC_PLUGINS=flood=flood_worker:FloodWorker`` with this directory on
``PYTHONPATH``; its child is this file run as a script. Config: ``lines`` (step lines to
write), ``episode_length`` (an episode line every that many steps).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import Field

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata


class FloodConfig(WorkerConfig):
    lines: int = Field(1_000_000, ge=0)
    episode_length: int = Field(1000, ge=1)


class FloodWorker:
    @hookimpl
    def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        return WorkerMetadata(name="Flood", version="1.0"), WorkerCapabilities(worker_type="flood")

    @hookimpl
    def mosaic_worker_config_model(self) -> type[WorkerConfig]:
        return FloodConfig

    @hookimpl
    def mosaic_worker_launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        return LaunchCommand(argv=(sys.executable, __file__, str(config_path)))


def flood(run_id: str, lines: int, episode_length: int) -> None:
    from mosaic_sdk.telemetry import TelemetryEmitter

    with TelemetryEmitter(run_id, sys.stdout) as em:
        em.run_started(worker_type="flood")
        step = em.step
        episode = 0
        for i in range(lines):
            t = i % episode_length
            end = t == episode_length - 1
            step(episode, t, 1.0, terminated=end)
            if end:
                em.episode(episode, float(episode_length), episode_length, terminated=True)
                episode += 1
        em.run_completed(episodes=episode, total_reward=float(lines), duration_seconds=0.0)


if __name__ == "__main__":
    cfg = json.loads(Path(sys.argv[1]).read_text())
    flood(cfg["run_id"], int(cfg.get("lines", 1_000_000)), int(cfg.get("episode_length", 1000)))
