"""The SDK's stand-in for ``gym_gui.core.worker``, loaded under that name only when the MOSAIC
GUI (``gym_gui``) is not installed (see :mod:`mosaic_sdk.plugins.gym_gui_stand_in`).

It provides the names a worker written to the platform's guide imports:

* ``WorkerMetadata`` and ``WorkerCapabilities``: frozen dataclasses with the platform's fields,
  in its order, with its types (``upstream_library``, ``upstream_version`` and
  ``gpu_memory_mb`` are ``Optional``; the vocabularies are tuples). The platform requires all
  14 capability fields; here the eight after ``max_agents`` default to the SDK contract's
  defaults, because the guide's own example passes only some of them. A worker that must also
  load under the GUI passes all 14.
* ``TelemetryEmitter(run_id, *, sink=None, logger=None)`` with ``run_started``,
  ``run_completed``, ``run_failed``, ``run_cancelled``, ``heartbeat``, ``checkpoint_saved``
  and ``checkpoint_loaded``, each taking a payload dict, as the platform's emitter does. Lines
  are written by the SDK's emitter: the platform's lifecycle shape (``event``, ``payload``,
  ``run_id``, ``timestamp``) plus ``schema_version``, ``seq``, ``ts_unix_ns`` and ``type``,
  flushed at once.
* ``LifecycleEvent``, ``LifecycleEventType``, and the ``WorkerConfig`` / ``WorkerRuntime``
  protocols.

The platform module's other names (analytics manifests, ``WorkerCLI``, its discovery and
config loaders) are not provided: importing one raises ``ImportError``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional, Protocol, TextIO, runtime_checkable

__mosaic_stand_in__ = True


@dataclass(frozen=True)
class WorkerMetadata:
    """Who the worker is (the platform's eight fields, all required, as upstream)."""

    name: str
    version: str
    description: str
    author: str
    homepage: str
    upstream_library: Optional[str]  # noqa: UP045 - the platform's spelling, kept
    upstream_version: Optional[str]  # noqa: UP045
    license: str


@dataclass(frozen=True)
class WorkerCapabilities:
    """What the worker can do (the platform's 14 fields; see the module docstring)."""

    worker_type: str
    supported_paradigms: tuple[str, ...]
    env_families: tuple[str, ...]
    action_spaces: tuple[str, ...]
    observation_spaces: tuple[str, ...]
    max_agents: int
    supports_self_play: bool = False
    supports_population: bool = False
    supports_checkpointing: bool = False
    supports_pause_resume: bool = False
    requires_gpu: bool = False
    gpu_memory_mb: Optional[int] = None  # noqa: UP045
    cpu_cores: int = 1
    estimated_memory_mb: int = 512

    def supports_paradigm(self, paradigm: str) -> bool:
        return paradigm in self.supported_paradigms

    def supports_env_family(self, family: str) -> bool:
        return family in self.env_families

    def is_multi_agent(self) -> bool:
        return self.max_agents > 1


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
    payload: dict[str, Any]


@runtime_checkable
class WorkerConfig(Protocol):
    """A worker's config: ``run_id``, ``seed``, ``to_dict()`` and ``from_dict()``."""

    run_id: str
    seed: Optional[int]  # noqa: UP045

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerConfig: ...


@runtime_checkable
class WorkerRuntime(Protocol):
    """A worker's runtime: ``run()`` returns a summary dict."""

    def run(self) -> dict[str, Any]: ...


class TelemetryEmitter:
    """Lifecycle lines on stdout (or ``sink``), written by the SDK's emitter.

    ``constant`` (the platform's log constant) is accepted; when a ``logger`` was given, each
    event with a constant is also logged at INFO.
    """

    def __init__(
        self,
        run_id: str,
        *,
        sink: TextIO | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        from mosaic_sdk.telemetry.emitter import TelemetryEmitter as SdkEmitter

        self._run_id = run_id
        self._lines = SdkEmitter(run_id, sink)
        self._logger = logger

    def _emit(self, event: LifecycleEventType, payload: Any, constant: Any) -> None:
        self._lines.lifecycle(event.value, dict(payload or {}))
        if constant is not None and self._logger is not None:
            self._logger.info("%s (run %s): %s", event.value, self._run_id, constant)

    def run_started(self, payload: dict[str, Any], *, constant: Any = None) -> None:
        self._emit(LifecycleEventType.RUN_STARTED, payload, constant)

    def run_completed(self, payload: dict[str, Any], *, constant: Any = None) -> None:
        self._emit(LifecycleEventType.RUN_COMPLETED, payload, constant)

    def run_failed(
        self,
        payload: dict[str, Any],
        *,
        constant: Any = None,
        exc_info: BaseException | None = None,
    ) -> None:
        self._emit(LifecycleEventType.RUN_FAILED, payload, constant)

    def run_cancelled(self, payload: dict[str, Any], *, constant: Any = None) -> None:
        self._emit(LifecycleEventType.RUN_CANCELLED, payload, constant)

    def heartbeat(self, payload: dict[str, Any] | None = None, *, constant: Any = None) -> None:
        self._emit(LifecycleEventType.HEARTBEAT, payload, constant)

    def checkpoint_saved(self, payload: dict[str, Any], *, constant: Any = None) -> None:
        self._emit(LifecycleEventType.CHECKPOINT_SAVED, payload, constant)

    def checkpoint_loaded(self, payload: dict[str, Any], *, constant: Any = None) -> None:
        self._emit(LifecycleEventType.CHECKPOINT_LOADED, payload, constant)


__all__ = [
    "LifecycleEvent",
    "LifecycleEventType",
    "TelemetryEmitter",
    "WorkerCapabilities",
    "WorkerConfig",
    "WorkerMetadata",
    "WorkerRuntime",
]
