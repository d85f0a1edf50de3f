"""Adapter that presents an upstream-style ``get_worker_metadata()`` factory as a plugin."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mosaic_sdk.contract import (
    LaunchCommand,
    WorkerCapabilities,
    WorkerConfig,
    WorkerConfigWithExtras,
    WorkerMetadata,
)
from mosaic_sdk.hookspecs import hookimpl
from mosaic_sdk.plugins.gym_gui_stand_in import LAUNCHER


def _as_tuple(value: object) -> object:
    return tuple(value) if isinstance(value, (list, set, frozenset)) else value


def fields_of(obj: object, model: type[BaseModel]) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        source = dict(obj)
    else:
        source = {n: getattr(obj, n) for n in model.model_fields if hasattr(obj, n)}
    return {k: _as_tuple(v) for k, v in source.items() if k in model.model_fields}


def sdk_pair(meta: object, caps: object) -> tuple[WorkerMetadata, WorkerCapabilities]:
    """``(metadata, capabilities)`` as the SDK's models (from anything with their fields)."""
    if not isinstance(meta, WorkerMetadata):
        meta = WorkerMetadata(**fields_of(meta, WorkerMetadata))
    if not isinstance(caps, WorkerCapabilities):
        caps = WorkerCapabilities(**fields_of(caps, WorkerCapabilities))
    return meta, caps


class UpstreamConfig(WorkerConfigWithExtras):
    """Config of an upstream-style worker: its own keys are unknown to us, so kept as extras."""


class UpstreamWorkerAdapter:
    """Presents an upstream-style ``get_worker_metadata()`` factory as a worker plugin."""

    def __init__(self, name: str, factory: Callable[[], object], module: str) -> None:
        self.name = name
        self.factory = factory
        self.module = module
        self.package = module.split(".")[0]

    @hookimpl
    def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        result = self.factory()
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(
                f"{self.module} factory returned {type(result).__name__}; "
                "expected a (metadata, capabilities) pair"
            )
        return sdk_pair(*result)

    @hookimpl
    def mosaic_worker_config_model(self) -> type[WorkerConfig]:
        return UpstreamConfig

    @hookimpl
    def mosaic_worker_launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        return LaunchCommand(
            argv=(
                sys.executable,
                "-m",
                LAUNCHER,
                f"{self.package}.cli",
                "--config",
                str(config_path),
            )
        )
