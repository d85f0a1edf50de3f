"""JSONL telemetry for workers: emitter, heartbeat, reader/validator, versioned schema.

Light to import (no numpy, pydantic or pluggy): a worker pays only for what it uses.
"""

from mosaic_sdk.telemetry.emitter import (
    LIFECYCLE_EVENTS,
    METRICS_EVENT,
    SCHEMA_VERSION,
    TERMINAL_EVENTS,
    TelemetryEmitter,
)
from mosaic_sdk.telemetry.heartbeat import DEFAULT_HEARTBEAT_INTERVAL, Heartbeat
from mosaic_sdk.telemetry.output import DEFAULT_FLUSH_INTERVAL
from mosaic_sdk.telemetry.reader import TelemetryLine, classify_line, validate_line

__all__ = [
    "DEFAULT_FLUSH_INTERVAL",
    "DEFAULT_HEARTBEAT_INTERVAL",
    "LIFECYCLE_EVENTS",
    "METRICS_EVENT",
    "SCHEMA_VERSION",
    "TERMINAL_EVENTS",
    "Heartbeat",
    "TelemetryEmitter",
    "TelemetryLine",
    "classify_line",
    "validate_line",
]
