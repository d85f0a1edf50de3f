"""The worker's plugin: its hooks, and ``get_worker_metadata``, which the ``mosaic.workers``
entry point ``cleanrl`` names. The MOSAIC platform calls it and gets the worker's metadata and
capabilities as its own classes; the SDK registers this module's hooks from the same entry
point (see ``docs/reference/plugins.md``)."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.plugins import platform_factory
from mosaic_worker_cleanrl import __version__

#: The entry point: `cleanrl = "mosaic_worker_cleanrl.plugin:get_worker_metadata"`.
get_worker_metadata = platform_factory(__name__)


def _upstream_version() -> str:

    try:
        return metadata.version("cleanrl")
    except metadata.PackageNotFoundError:
        return ""


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    metadata = WorkerMetadata(
        name="CleanRL Worker",
        version=__version__,
        description="CleanRL's single-file algorithms with telemetry, FastLane, curriculum "
        "and gymnasium 1.x compatibility",
        author="mosaic-worker-sdk developers",
        upstream_library="cleanrl",
        upstream_version=_upstream_version(),
        license="MIT",
    )
    capabilities = WorkerCapabilities(
        worker_type="cleanrl",
        supported_paradigms=("sequential",),
        env_families=(
            "gymnasium",
            "classic_control",
            "box2d",
            "atari",
            "mujoco",
            "minigrid",
            "babyai",
        ),
        action_spaces=("discrete", "continuous"),
        observation_spaces=("vector", "image"),
        supports_checkpointing=True,
        supports_fastlane=True,
        control_protocol=1,
        requires_gpu=False,
        estimated_memory_mb=512,
    )
    return metadata, capabilities


@hookimpl
def mosaic_worker_config_model() -> type[WorkerConfig]:
    # start-up time: discovery imports this module
    from mosaic_worker_cleanrl.config import CleanRLConfig

    return CleanRLConfig


@hookimpl
def mosaic_worker_launch_command(
    config_path: Path, config: WorkerConfig, run_dir: Path
) -> LaunchCommand:
    return LaunchCommand(
        argv=(sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(config_path))
    )


@hookimpl
def mosaic_worker_conformance_config() -> dict[str, Any]:
    # Our PPO for two short iterations: a few seconds, episodes and steps guaranteed.
    return {
        "algo": "ppo",
        "env_id": "CartPole-v1",
        "total_timesteps": 1024,
        "seed": 3,
        "algo_params": {"num_steps": 128, "update_epochs": 1},
    }


@hookimpl
def mosaic_worker_make_env(config: WorkerConfig) -> Any:
    import gymnasium  # start-up time: discovery imports this module

    from mosaic_worker_cleanrl.env_families import register_env_families

    register_env_families()
    return gymnasium.make(getattr(config, "env_id", "CartPole-v1"), render_mode="rgb_array")


@hookimpl
def mosaic_worker_algo_params_schema(algo: str | None) -> dict[str, dict[str, Any]]:
    """The JSON Schema of each algorithm's ``algo_params``, read from its script."""
    from mosaic_worker_cleanrl.registry import (  # start-up time: discovery imports this module
        ALGORITHMS,
        AlgorithmNotFoundError,
        algo_params_schema,
        algo_params_schemas,
        resolve,
    )

    if algo is None:
        return algo_params_schemas()
    if algo not in ALGORITHMS:
        return {}
    try:
        return {algo: algo_params_schema(resolve(algo))}
    except AlgorithmNotFoundError:
        return {}


@hookimpl
def mosaic_worker_details() -> dict[str, Any]:
    """`mosaic workers show cleanrl`: the algorithms, whether each runs here and why not, and
    what `algo_params.save_model` gives for each."""
    # start-up time: discovery imports this module
    from mosaic_worker_cleanrl.registry import algorithm_table

    rows = [
        {
            "name": r["name"],
            "family": r["family"],
            "source": r["source"],
            "runs": r["runs"],
            "gym_layer": r["gym_layer"],
            "params": r["params"],
            "save_model": r["save_model"],
            "why_not": r["why_not"],
        }
        for r in algorithm_table()
    ]
    return {"Algorithms": rows}
