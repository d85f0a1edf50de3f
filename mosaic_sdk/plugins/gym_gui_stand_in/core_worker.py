"""The stand-in's ``gym_gui.core.worker``: every name the platform's module exports, working."""

from __future__ import annotations

from mosaic_sdk.plugins.gym_gui_stand_in.worker_analytics import (
    ArtifactsMetadata,
    CheckpointMetadata,
    TensorBoardMetadata,
    WandBMetadata,
    WorkerAnalyticsManifest,
)
from mosaic_sdk.plugins.gym_gui_stand_in.worker_cli import (
    WorkerCLI,
    extract_worker_config,
    load_worker_config_from_file,
)
from mosaic_sdk.plugins.gym_gui_stand_in.worker_discovery import (
    WORKER_ENTRY_POINT_GROUP,
    DiscoveredWorker,
    WorkerDiscovery,
    discover_workers,
)
from mosaic_sdk.plugins.gym_gui_stand_in.worker_protocol import (
    WorkerCapabilities,
    WorkerConfig,
    WorkerMetadata,
    WorkerRuntime,
)
from mosaic_sdk.plugins.gym_gui_stand_in.worker_telemetry import (
    LifecycleEvent,
    LifecycleEventType,
    TelemetryEmitter,
)

__all__ = [
    "WORKER_ENTRY_POINT_GROUP",
    "ArtifactsMetadata",
    "CheckpointMetadata",
    "DiscoveredWorker",
    "LifecycleEvent",
    "LifecycleEventType",
    "TelemetryEmitter",
    "TensorBoardMetadata",
    "WandBMetadata",
    "WorkerAnalyticsManifest",
    "WorkerCLI",
    "WorkerCapabilities",
    "WorkerConfig",
    "WorkerDiscovery",
    "WorkerMetadata",
    "WorkerRuntime",
    "discover_workers",
    "extract_worker_config",
    "load_worker_config_from_file",
]
