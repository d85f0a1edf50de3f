"""The multi-agent example worker's plugin (entry point ``example_ma``): see ``turnbased.py``.

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
from mosaic_worker_example import __version__
from mosaic_worker_example.turnbased import WORKER_TYPE, TurnBasedConfig

#: The entry point (pyproject.toml):
#: `example_turnbased = "mosaic_worker_example.turnbased_plugin:get_worker_metadata"`.
get_worker_metadata = platform_factory(__name__)


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    return describe()


def describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    metadata = WorkerMetadata(
        name="Example Turn-Based Worker",
        version=__version__,
        description="Two players learn tic-tac-toe (PettingZoo AEC) by self-play or against "
        "a random opponent, reporting every move per agent; a person can play one side",
        author="mosaic-worker-sdk developers",
        upstream_library="pettingzoo",
        license="MIT",
    )
    capabilities = WorkerCapabilities(
        worker_type=WORKER_TYPE,  # must equal the entry-point name
        supported_paradigms=("turn_based",),
        env_families=("pettingzoo",),
        action_spaces=("discrete",),
        observation_spaces=("dict",),
        max_agents=2,
        supports_self_play=True,
        # Each agent's moves in a game are its steps 0, 1, 2... (see turnbased.py).
        step_numbering="per_agent",
        supports_pause_resume=True,
        supports_checkpointing=True,
        control_protocol=1,
        estimated_memory_mb=128,
    )
    return metadata, capabilities


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
