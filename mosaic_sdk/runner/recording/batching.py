"""The recorder's first stage: :class:`StoreBatcher`, the batches of a run's stdout lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mosaic_sdk.runner.recording.health import STALLED_EVENT, RunHealth, stall_reason
from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.recording.notify import Notify
from mosaic_sdk.runner.recording.outcome import lifecycle_event
from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.supervision.lifecycle import READ_WAIT, RunObserver


class RunListener:
    """Who hears of a run while it is recorded; this one only warns (``warn``, default: the
    process's reporter)."""

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self.warn = warn or current_reporter().warn

    def abandoning(self) -> bool:
        """Whether the run is being given up (the writer stops waiting for a stalled store)."""
        return False

    def control_reply(self, reply: dict[str, Any]) -> None:
        """A ``control_reply`` line of the worker (it is stored as well)."""

    def tick(self) -> None:
        """Every check of the read loop (the live view)."""

    def stalled(self, reason: str) -> bool:
        """The run stalled; returns whether the listener stops it for that."""
        return False


class StoreBatcher(RunObserver):
    """Has a run's lines parsed into batches and hands each to the store writer at
    ``batch_lines`` lines, ``flush_interval`` s after its first line, or at once when it holds a
    lifecycle line; keeps the run's health and tells the :class:`RunListener` what it hears."""

    def __init__(
        self,
        ingest: LineIngest,
        writer: StoreWriter,
        notify: Notify,
        health: RunHealth,
        listener: RunListener,
        *,
        batch_lines: int,
        flush_interval: float,
    ) -> None:
        self.run_id = ingest.run_id
        self.ingest = ingest
        self.writer = writer
        self.notify = notify
        self.health = health
        self.listener = listener
        self.batch_lines = batch_lines
        self.flush_interval = flush_interval
        self.serial = 1  # serial of the batch being filled (1, 2, ...)
        self.batch = LineBatch(serial=1)
        self.writer_gone = False
        self.health_events = 0  # the stalled/recovered events stored (not the worker's)

    def _hand_over(self) -> None:
        self.writer.submit(self.batch)
        self.serial += 1
        self.batch = LineBatch(serial=self.serial)

    def max_wait(self, now: float) -> float:
        if self.batch.first_at is None:
            return READ_WAIT
        return self.batch.first_at + self.flush_interval - now

    def add_event(self, event: dict[str, Any]) -> None:
        """Store a lifecycle event the runner made up, after the lines read so far (handed
        over at once)."""
        batch = self.batch
        if batch.first_at is None:
            batch.first_at = time.monotonic()
        self.ingest.add_synthesised(batch, event)
        self.notify.expect(batch.serial, [event])
        self._hand_over()

    def on_lines(self, lines: list[bytes], arrived: float, eof: bool, partial: bool) -> None:
        if lines:
            health = self.health
            health.last_line_at = arrived  # one store per chunk read, not per line
            if health.stalled_at is not None:  # "recovered" goes before the lines that ended it
                self._check_health(arrived)
        start, total = 0, len(lines)
        while start < total:  # fill batches of at most batch_lines lines
            batch = self.batch
            if batch.first_at is None:
                batch.first_at = time.monotonic()
            end = min(total, start + self.batch_lines - batch.lines)
            events = self.ingest.add(batch, lines[start:end], partial_last=partial and end == total)
            start = end
            if events:
                self.health.on_events(events, arrived)
                self.notify.expect(batch.serial, events)
                self._hand_over()
            elif batch.lines >= self.batch_lines:
                self._hand_over()

    def on_pass(self, now: float, eof: bool) -> None:
        first_at = self.batch.first_at
        if first_at is not None and (eof or now >= first_at + self.flush_interval):
            self._hand_over()

    def _check_health(self, now: float) -> None:
        change = self.health.check(now)
        if change is not None:
            self.health_changed(change)

    def health_changed(self, change: dict[str, Any]) -> None:
        """Store a change of the run's health (a :meth:`RunHealth.check` payload, with its
        ``event`` key), warn, and tell the listener of a stall."""
        payload = dict(change)
        name = str(payload.pop("event"))
        self.add_event(lifecycle_event(self.run_id, name, payload))
        self.health_events += 1
        if name == STALLED_EVENT:
            reason = stall_reason(payload)
            stops = self.listener.stalled(reason)
            self.listener.warn(f"run {self.run_id} {reason}{'; stopping it' if stops else ''}")
        else:
            self.listener.warn(
                f"run {self.run_id} is writing again after {payload['silent_seconds']:g} s "
                "of silence (recovered)"
            )

    def on_check(self, now: float) -> None:
        self._check_health(now)
        self.notify.deliver()
        self.listener.tick()
        self.check_writer()

    def check_writer(self) -> None:
        """Warn once when the store writer has stopped on an error (rows are counted lost from
        then on)."""
        if self.writer.failed and not self.writer_gone:
            self.writer_gone = True
            self.listener.warn(
                f"the store writer of run {self.run_id} stopped "
                f"({self.writer.error}); the rest of the run is not stored and it will fail"
            )

    def on_output_held_open(self) -> None:
        self.listener.warn(
            f"the worker of run {self.run_id} exited but a process "
            "outside its group keeps its stdout open; stopped reading"
        )
