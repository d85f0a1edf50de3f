"""The stand-in's ``TelemetryEmitter``: the platform's lifecycle methods, lines written by the
SDK's emitter.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TextIO

from mosaic_sdk.plugins.gym_gui_stand_in.log_constants import LogConstant
from mosaic_sdk.plugins.gym_gui_stand_in.logging_helpers import log_constant


class LifecycleEventType(str, Enum):
    """The lifecycle event names."""

    RUN_STARTED = "run_started"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    RUN_CANCELLED = "run_cancelled"
    HEARTBEAT = "heartbeat"
    CHECKPOINT_SAVED = "checkpoint_saved"
    CHECKPOINT_LOADED = "checkpoint_loaded"


@dataclass(frozen=True)
class LifecycleEvent:
    """One lifecycle event as the platform describes it."""

    event: str
    run_id: str
    timestamp: float
    payload: dict[str, object]


class TelemetryEmitter:
    """Lifecycle lines on stdout (or ``sink``), written by the SDK's emitter."""

    def __init__(
        self,
        run_id: str,
        *,
        sink: TextIO | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        # Imported here: importing the stand-in's light modules must not load the SDK's telemetry.
        from mosaic_sdk.telemetry.emitter import TelemetryEmitter as SdkEmitter

        self._run_id = run_id
        self._lines = SdkEmitter(run_id, sink)
        self._logger = logger

    def _emit(
        self,
        event: LifecycleEventType,
        payload: Mapping[str, object] | None,
        constant: LogConstant | None,
        exc_info: BaseException | None = None,
    ) -> None:
        body = dict(payload or {})
        self._lines.lifecycle(event.value, body)
        if constant is not None and self._logger is not None:
            log_constant(
                self._logger, constant, extra={"run_id": self._run_id, **body}, exc_info=exc_info
            )

    def run_started(
        self, payload: Mapping[str, object], *, constant: LogConstant | None = None
    ) -> None:
        self._emit(LifecycleEventType.RUN_STARTED, payload, constant)

    def run_completed(
        self, payload: Mapping[str, object], *, constant: LogConstant | None = None
    ) -> None:
        self._emit(LifecycleEventType.RUN_COMPLETED, payload, constant)

    def run_failed(
        self,
        payload: Mapping[str, object],
        *,
        constant: LogConstant | None = None,
        exc_info: BaseException | None = None,
    ) -> None:
        self._emit(LifecycleEventType.RUN_FAILED, payload, constant, exc_info)

    def run_cancelled(
        self, payload: Mapping[str, object], *, constant: LogConstant | None = None
    ) -> None:
        self._emit(LifecycleEventType.RUN_CANCELLED, payload, constant)

    def heartbeat(
        self, payload: Mapping[str, object] | None = None, *, constant: LogConstant | None = None
    ) -> None:
        self._emit(LifecycleEventType.HEARTBEAT, payload, constant)

    def checkpoint_saved(
        self, payload: Mapping[str, object], *, constant: LogConstant | None = None
    ) -> None:
        self._emit(LifecycleEventType.CHECKPOINT_SAVED, payload, constant)

    def checkpoint_loaded(
        self, payload: Mapping[str, object], *, constant: LogConstant | None = None
    ) -> None:
        self._emit(LifecycleEventType.CHECKPOINT_LOADED, payload, constant)


__all__ = ["LifecycleEvent", "LifecycleEventType", "TelemetryEmitter"]
