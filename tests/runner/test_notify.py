"""The recorder's last stage: a committed batch releases its events, and a stage that raises
leaves the others (and the events) going."""

from __future__ import annotations

from typing import Any

import pluggy

from mosaic_sdk import hookimpl
from mosaic_sdk.plugins import create_plugin_manager
from mosaic_sdk.runner.recording.notify import Notify
from mosaic_sdk.runner.storage.rows import LineBatch


class Events:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        self.events.append(event)


def _notify(*stages: Any) -> tuple[Notify, Events, list[str]]:
    pm: pluggy.PluginManager = create_plugin_manager()
    heard = Events()
    pm.register(heard, name="events")
    warnings: list[str] = []
    return Notify("R", "w", pm, warnings.append, *stages), heard, warnings


def test_events_are_delivered_once_their_batch_is_committed_in_order() -> None:
    notify, heard, _ = _notify()
    first, second = {"event": "run_started"}, {"event": "heartbeat"}
    notify.expect(1, [first])
    notify.expect(3, [second])
    notify.deliver()
    assert heard.events == []  # nothing committed yet
    notify.committed(LineBatch(serial=2))  # batches 1 and 2 (merged by the writer)
    notify.deliver()
    assert heard.events == [first]
    notify.committed(LineBatch())  # stderr rows (serial 0) release nothing
    notify.deliver()
    assert heard.events == [first]
    notify.deliver(final=True)  # the end: whatever is left, committed or not
    assert heard.events == [first, second]


def test_a_stage_that_raises_is_reported_once_and_the_rest_goes_on() -> None:
    got: list[LineBatch] = []

    def broken(batch: LineBatch) -> None:
        raise ValueError("broken stage")

    notify, heard, warnings = _notify(broken, got.append)
    for serial in (1, 2):
        notify.expect(serial, [{"event": f"e{serial}"}])
        notify.committed(LineBatch(serial=serial))
    notify.deliver()
    assert [b.serial for b in got] == [1, 2]
    assert [e["event"] for e in heard.events] == ["e1", "e2"]
    assert len(warnings) == 1 and "broken stage" in warnings[0]
