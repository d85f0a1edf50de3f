"""FastLane: live frames and HUD scalars from a worker to a viewer through shared memory."""

from __future__ import annotations

from mosaic_sdk.fastlane.environment import (
    FastLaneSettings,
    apply_fastlane_environment,
    read_fastlane_environment,
    resolve_fastlane,
)
from mosaic_sdk.fastlane.layout import FLAG_INVALIDATED
from mosaic_sdk.fastlane.reader import FastLaneFrameView, FastLaneReader
from mosaic_sdk.fastlane.records import (
    FastLaneBusyError,
    FastLaneConfig,
    FastLaneCorruptError,
    FastLaneError,
    FastLaneFrame,
    FastLaneMetrics,
    FastLaneUnavailableError,
)
from mosaic_sdk.fastlane.segment import cleanup_stale_segment
from mosaic_sdk.fastlane.tiling import tile_frames
from mosaic_sdk.fastlane.turns import FastLaneAECWrapper
from mosaic_sdk.fastlane.writer import FastLaneWriter, agent_stream_id, create_fastlane_name
from mosaic_sdk.lazy_exports import LazyExports

_LAZY = LazyExports(
    __name__,
    {
        "FastLaneTelemetryWrapper": "mosaic_sdk.fastlane.wrapper",
        "FastLaneVectorTelemetryWrapper": "mosaic_sdk.fastlane.wrapper",
    },
    # maybe_wrap_env wraps through the plugin hook, so it lives on the plugin floor now.
    moved={"maybe_wrap_env": "mosaic_sdk.plugins"},
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

__all__ = [
    "FLAG_INVALIDATED",
    "FastLaneAECWrapper",
    "FastLaneBusyError",
    "FastLaneConfig",
    "FastLaneCorruptError",
    "FastLaneError",
    "FastLaneFrame",
    "FastLaneFrameView",
    "FastLaneMetrics",
    "FastLaneReader",
    "FastLaneSettings",
    "FastLaneTelemetryWrapper",
    "FastLaneUnavailableError",
    "FastLaneVectorTelemetryWrapper",
    "FastLaneWriter",
    "agent_stream_id",
    "apply_fastlane_environment",
    "cleanup_stale_segment",
    "create_fastlane_name",
    "read_fastlane_environment",
    "resolve_fastlane",
    "tile_frames",
]
