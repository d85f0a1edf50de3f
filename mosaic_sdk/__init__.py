"""mosaic-worker-sdk: the plugin framework and worker SDK for MOSAIC.

The public face. Names are loaded on first use, so ``import mosaic_sdk.telemetry`` inside a
worker does not pay for pydantic or pluggy::

    from mosaic_sdk import hookimpl, WorkerConfig, WorkerMetadata, WorkerCapabilities
    from mosaic_sdk import TelemetryEmitter, Heartbeat
    from mosaic_sdk import FastLaneWriter, FastLaneReader, maybe_wrap_env
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "hookimpl": "mosaic_sdk.hookspecs",
    "hookspec": "mosaic_sdk.hookspecs",
    "PROTOCOL_VERSION": "mosaic_sdk.hookspecs",
    "WorkerMetadata": "mosaic_sdk.contract",
    "WorkerCapabilities": "mosaic_sdk.contract",
    "WorkerConfig": "mosaic_sdk.contract",
    "WorkerConfigWithExtras": "mosaic_sdk.contract",
    "LaunchCommand": "mosaic_sdk.contract",
    "ConfigError": "mosaic_sdk.contract",
    "TelemetryEmitter": "mosaic_sdk.telemetry",
    "Heartbeat": "mosaic_sdk.telemetry",
    "SCHEMA_VERSION": "mosaic_sdk.telemetry",
    "discover_workers": "mosaic_sdk.plugins",
    "FastLaneConfig": "mosaic_sdk.fastlane",
    "FastLaneFrame": "mosaic_sdk.fastlane",
    "FastLaneMetrics": "mosaic_sdk.fastlane",
    "FastLaneReader": "mosaic_sdk.fastlane",
    "FastLaneWriter": "mosaic_sdk.fastlane",
    "maybe_wrap_env": "mosaic_sdk.fastlane",
    "load_worker": "mosaic_sdk.plugins",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mosaic_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
