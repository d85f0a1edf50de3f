"""The platform's worker discovery API, as the stand-in's ``gym_gui.core.worker`` gives it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mosaic_sdk.plugins.gym_gui_stand_in.worker_protocol import (
    WorkerCapabilities,
    WorkerMetadata,
)

WORKER_ENTRY_POINT_GROUP = "mosaic.workers"

logger = logging.getLogger("gym_gui.core.worker.discovery")


@dataclass(frozen=True)
class DiscoveredWorker:
    """One worker found through its entry point."""

    worker_id: str
    metadata: WorkerMetadata
    capabilities: WorkerCapabilities
    entry_point_name: str
    module_path: str


class WorkerDiscovery:
    """Finds workers once and caches them (``force_reload`` or ``clear_cache`` to look again)."""

    def __init__(self) -> None:
        self._cache: dict[str, DiscoveredWorker] = {}
        self._loaded = False

    def _load(self, ep: object) -> DiscoveredWorker | None:
        name = str(getattr(ep, "name", "?"))
        value = str(getattr(ep, "value", "?"))
        try:
            result = ep.load()()  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, not raised
            logger.error("worker %r (%s) failed to load: %s", name, value, exc, exc_info=True)
            return None
        if not (isinstance(result, tuple) and len(result) == 2):
            logger.error(
                "worker %r (%s) returned %s; its factory must return "
                "(WorkerMetadata, WorkerCapabilities)",
                name,
                value,
                type(result).__name__,
            )
            return None
        metadata, capabilities = result
        for obj, cls in ((metadata, WorkerMetadata), (capabilities, WorkerCapabilities)):
            if not isinstance(obj, cls):
                logger.error(
                    "worker %r (%s) returned a %s where gym_gui.core.worker.%s is needed",
                    name,
                    value,
                    type(obj).__name__,
                    cls.__name__,
                )
                return None
        if capabilities.worker_type != name:
            logger.warning(
                "worker %r declares worker_type %r; the entry-point name is its id",
                name,
                capabilities.worker_type,
            )
        return DiscoveredWorker(name, metadata, capabilities, name, value)

    def discover_all(self, *, force_reload: bool = False) -> list[DiscoveredWorker]:
        """All workers found, sorted by id."""
        if force_reload:
            self.clear_cache()
        if not self._loaded:
            # only when workers are listed (the stand-in's import stays light)
            from importlib.metadata import entry_points

            for ep in entry_points(group=WORKER_ENTRY_POINT_GROUP):
                if ep.name in self._cache:
                    logger.error(
                        "two entry points are named %r (%s and %s); the first is kept, "
                        "uninstall or rename the other",
                        ep.name,
                        self._cache[ep.name].module_path,
                        ep.value,
                    )
                    continue
                found = self._load(ep)
                if found is not None:
                    self._cache[found.worker_id] = found
            self._loaded = True
        return sorted(self._cache.values(), key=lambda w: w.worker_id)

    def get_worker(self, worker_id: str) -> DiscoveredWorker | None:
        self.discover_all()
        return self._cache.get(worker_id)

    def list_worker_ids(self) -> list[str]:
        return [w.worker_id for w in self.discover_all()]

    def has_worker(self, worker_id: str) -> bool:
        return self.get_worker(worker_id) is not None

    def get_capabilities(self, worker_id: str) -> WorkerCapabilities | None:
        worker = self.get_worker(worker_id)
        return worker.capabilities if worker is not None else None

    def filter_by_paradigm(self, paradigm: str) -> list[DiscoveredWorker]:
        return [w for w in self.discover_all() if w.capabilities.supports_paradigm(paradigm)]

    def filter_by_env_family(self, family: str) -> list[DiscoveredWorker]:
        return [w for w in self.discover_all() if w.capabilities.supports_env_family(family)]

    def clear_cache(self) -> None:
        self._cache.clear()
        self._loaded = False


def discover_workers() -> list[DiscoveredWorker]:
    """All workers found by a fresh :class:`WorkerDiscovery`."""
    return WorkerDiscovery().discover_all()


__all__ = ["WORKER_ENTRY_POINT_GROUP", "DiscoveredWorker", "WorkerDiscovery", "discover_workers"]
