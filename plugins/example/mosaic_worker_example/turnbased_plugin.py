"""The turn-based example worker's plugin (entry point ``example_turnbased``): see
``turnbased.py``.

A second worker of this package rather than a third plugin: it shares the example's metadata,
its tests and its install, and differs only in the env and the per-agent telemetry. Importing
this module is cheap (no PettingZoo): discovery calls ``mosaic_worker_describe`` for every
installed worker.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.plugins import platform_factory
from mosaic_worker_example.turnbased import TurnBasedConfig, describe

#: The entry point (pyproject.toml):
#: `example_turnbased = "mosaic_worker_example.turnbased_plugin:get_worker_metadata"`.
get_worker_metadata = platform_factory(__name__)


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    return describe()


@hookimpl
def mosaic_worker_config_model() -> type[WorkerConfig]:
    return TurnBasedConfig


@hookimpl
def mosaic_worker_launch_command(
    config_path: Path, config: WorkerConfig, run_dir: Path
) -> LaunchCommand:
    return LaunchCommand(
        argv=(
            sys.executable,
            "-m",
            "mosaic_worker_example.turnbased",
            "--config",
            str(config_path),
        )
    )


@hookimpl
def mosaic_worker_conformance_config() -> dict[str, object]:
    # Small and deterministic; the move delay makes a run last about 1.5 s (streaming,
    # heartbeats and a SIGTERM in the middle of a run are observed): 4 games of 5 to 9 moves.
    return {"episodes": 4, "seed": 7, "step_delay_ms": 50.0}
