"""The worker's plugin: the module the `mosaic.workers` entry point belongs to.

Each function marked `@hookimpl` answers one hook of `mosaic_sdk.hookspecs`. Keep them cheap:
discovery calls `mosaic_worker_describe` for every installed worker.

The entry point names `get_worker_metadata` (below): the MOSAIC platform calls it and gets the
description in its own classes; the SDK registers this module's hooks.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.plugins import platform_factory
from mosaic_worker_example import __version__
from mosaic_worker_example.config import ExampleConfig

#: The entry point: `example = "mosaic_worker_example.plugin:get_worker_metadata"`.
get_worker_metadata = platform_factory(__name__)


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    return describe()


def describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    metadata = WorkerMetadata(
        name="Example Worker",
        version=__version__,
        description="Runs a gymnasium env with a simple policy and reports full telemetry",
        author="mosaic-worker-sdk developers",
        upstream_library="gymnasium",
        license="MIT",
    )
    capabilities = WorkerCapabilities(
        worker_type="example",  # must equal the entry-point name
        supported_paradigms=("sequential",),
        env_families=("gymnasium", "classic_control"),
        action_spaces=("discrete", "continuous"),
        observation_spaces=("vector",),
        supports_fastlane=True,
        supports_pause_resume=True,
        supports_checkpointing=True,
        control_protocol=1,
        estimated_memory_mb=128,
    )
    return metadata, capabilities


@hookimpl
def mosaic_worker_config_model() -> type[WorkerConfig]:
    return ExampleConfig


@hookimpl
def mosaic_worker_launch_command(
    config_path: Path, config: WorkerConfig, run_dir: Path
) -> LaunchCommand:
    # The runner adds MOSAIC_RUN_ID and MOSAIC_RUN_DIR to the environment itself.
    return LaunchCommand(
        argv=(sys.executable, "-m", "mosaic_worker_example", "--config", str(config_path))
    )


@hookimpl
def mosaic_worker_conformance_config() -> dict[str, object]:
    # Small and deterministic: the conformance suite runs the worker several times. The step
    # delay makes a run last about 1 s, long enough to observe streaming, heartbeats and a
    # SIGTERM in the middle of a run.
    return {"episodes": 3, "max_steps_per_episode": 40, "seed": 7, "step_delay_ms": 8.0}


@hookimpl
def mosaic_worker_make_env(config: WorkerConfig) -> Any:
    import gymnasium

    env_id = getattr(config, "env_id", "CartPole-v1")
    return gymnasium.make(env_id, render_mode="rgb_array")
