"""mosaic-worker-sdk: the plugin framework and worker SDK for MOSAIC."""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

__version__ = "0.1.0"

_LAZY = LazyExports(
    __name__,
    {
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
        "maybe_wrap_env": "mosaic_sdk.plugins.wrapping",
        "load_worker": "mosaic_sdk.plugins",
    },
    eager=["__version__"],
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir
__all__ = _LAZY.all()
