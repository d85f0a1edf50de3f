"""The store side of a run's stdout: :class:`StoreBatcher` fills batches of the worker's lines
for the :class:`~mosaic_sdk.runner.recording.ingest.StoreWriter` (at most ``batch_lines`` lines,
handed over after ``flush_interval`` seconds at the latest), and hands each batch's lifecycle events
to ``on_event`` only once the writer has committed that batch. It also keeps the run's
:class:`~mosaic_sdk.runner.recording.health.RunHealth` up to date (the arrival time of each
chunk of lines, never of each line) and checks it at every check of the read loop.

It is the stdout side of :class:`~mosaic_sdk.runner.recording.recorder.RunRecorder`: a
:class:`~mosaic_sdk.runner.supervision.lifecycle.RunObserver` fed by the run's lifecycle under
``mosaic run``, or by :meth:`RunRecorder.add_stdout
<mosaic_sdk.runner.recording.recorder.RunRecorder.add_stdout>` with the lines a Ray trial sent to
the driver."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mosaic_sdk.runner.recording.health import RunHealth
from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.supervision.lifecycle import READ_WAIT, RunObserver


class StoreBatcher(RunObserver):
    """Batches the worker's lines for the store writer, runs the hooks of committed batches,
    and calls ``on_tick`` at every check of the read loop (the live view)."""

    def __init__(
        self,
        run_id: str,
        writer: StoreWriter,
        ingest: LineIngest,
        *,
        batch_lines: int,
        flush_interval: float,
        on_event: Callable[[dict[str, Any]], None],
        on_tick: Callable[[], None],
        warn: Callable[[str], None] | None = None,
        health: RunHealth | None = None,
        on_health: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.warn = warn or current_reporter().warn
        self.writer = writer
        self.ingest = ingest
        self.batch_lines = batch_lines
        self.flush_interval = flush_interval
        self.on_event = on_event
        self.on_tick = on_tick
        self.serial = 1  # serial of the batch being filled (1, 2, ...)
        self.batch = LineBatch(serial=1)
        self.hooks_due: list[tuple[int, list[dict[str, Any]]]] = []  # (batch serial, events)
        self.writer_gone = False
        #: The run's health (no stall detection when none is given), and who hears of a
        #: change (the payload :meth:`RunHealth.check` returned).
        self.health = health if health is not None else RunHealth(0)
        self.on_health = on_health

    def final_batch(self) -> LineBatch:
        """A new batch after every one handed over: for what the runner adds at the end."""
        return LineBatch(serial=self.serial + 1)

    def run_due_hooks(self, final: bool = False) -> None:
        """``on_event`` for the events of every committed batch (of every batch: ``final``)."""
        while self.hooks_due and (final or self.hooks_due[0][0] <= self.writer.committed_serial):
            _, events = self.hooks_due.pop(0)
            for event in events:
                self.on_event(event)

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
        over at once; ``on_event`` hears of it once committed)."""
        batch = self.batch
        if batch.first_at is None:
            batch.first_at = time.monotonic()
        self.ingest.add_synthesised(batch, event)
        self.hooks_due.append((batch.serial, [event]))
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
                self.hooks_due.append((batch.serial, events))
                self._hand_over()
            elif batch.lines >= self.batch_lines:
                self._hand_over()

    def on_pass(self, now: float, eof: bool) -> None:
        first_at = self.batch.first_at
        if first_at is not None and (eof or now >= first_at + self.flush_interval):
            self._hand_over()

    def _check_health(self, now: float) -> None:
        change = self.health.check(now)
        if change is not None and self.on_health is not None:
            self.on_health(change)

    def on_check(self, now: float) -> None:
        self._check_health(now)
        self.run_due_hooks()
        self.on_tick()
        if not self.writer.alive and not self.writer_gone:  # rows are counted lost from here
            self.writer_gone = True
            self.warn(
                f"the store writer of run {self.run_id} stopped "
                f"({self.writer.error}); the rest of the run is not stored and it will fail"
            )

    def on_output_held_open(self) -> None:
        self.warn(
            f"the worker of run {self.run_id} exited but a process "
            "outside its group keeps its stdout open; stopped reading"
        )


__all__ = ["StoreBatcher"]
