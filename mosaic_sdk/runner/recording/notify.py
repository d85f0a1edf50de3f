"""The last stage of a run's recorder: who hears of what the store writer committed."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mosaic_sdk.runner.storage.rows import LineBatch

if TYPE_CHECKING:
    import pluggy

EVENT_HOOK = "mosaic_telemetry_event"

Event = dict[str, Any]


class Notify:
    """The writer's commit callback: each committed batch goes to ``stages`` (on the writer's
    thread; one that raises is warned about once and dropped) and releases its lifecycle events,
    which :meth:`deliver` hands to ``mosaic_telemetry_event`` on the reading thread."""

    def __init__(
        self,
        run_id: str,
        worker: str,
        pm: pluggy.PluginManager | None,
        warn: Callable[[str], None],
        *stages: Callable[[LineBatch], None],
    ) -> None:
        self.run_id = run_id
        self.worker = worker
        self.pm = pm
        self.warn = warn
        self.stages = list(stages)
        self._lock = threading.Lock()
        self._waiting: deque[tuple[int, list[Event]]] = deque()  # (batch serial, its events)
        self._ready: deque[Event] = deque()  # committed, not yet handed to the hook

    def expect(self, serial: int, events: list[Event]) -> None:
        """``events`` are in batch ``serial``, about to be handed to the writer."""
        if self.pm is None:  # nobody hears of events
            return
        with self._lock:
            self._waiting.append((serial, events))

    def committed(self, batch: LineBatch) -> None:
        """The writer committed ``batch`` (its thread): release its events, pass it on."""
        if batch.serial:
            with self._lock:
                waiting, ready = self._waiting, self._ready
                while waiting and waiting[0][0] <= batch.serial:
                    ready.extend(waiting.popleft()[1])
        for stage in tuple(self.stages):
            try:
                stage(batch)
            except Exception as exc:  # noqa: BLE001 - the rows are stored: report, go on
                self.stages.remove(stage)
                self.warn(f"the commit callback {stage!r} raised {exc!r}; not called again")

    def deliver(self, final: bool = False) -> None:
        """Hand the committed events (every event expected: ``final``) to the event hook."""
        if not (self._ready or final):  # (read without the lock: at worst one check later)
            return
        with self._lock:
            events = list(self._ready)
            self._ready.clear()
            if final:
                for _, more in self._waiting:
                    events.extend(more)
                self._waiting.clear()
        for event in events:
            self.event(event)

    def event(self, event: Event) -> None:
        """``mosaic_telemetry_event`` for one event (a plugin that raises is warned about; the
        run goes on)."""
        if self.pm is None:
            return
        try:
            self.pm.hook.mosaic_telemetry_event(run_id=self.run_id, worker=self.worker, event=event)
        except Exception as exc:  # noqa: BLE001 - a plugin's bug must not stop the run
            self.warn(f"a {EVENT_HOOK} hook raised {type(exc).__name__}: {exc} (the run goes on)")
