"""One run's recorder, from the worker's lines to the store and the plugins: ``RunRecorder``."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mosaic_sdk.runner.recording.batching import RunListener, StoreBatcher
from mosaic_sdk.runner.recording.health import RunHealth
from mosaic_sdk.runner.recording.ingest import LineIngest, StderrIngest
from mosaic_sdk.runner.recording.notify import Notify
from mosaic_sdk.runner.recording.observers import ObserverFeed
from mosaic_sdk.runner.recording.outcome import Outcome, decide, record_end
from mosaic_sdk.runner.recording.step_frames import StepFrames
from mosaic_sdk.runner.recording.tensorboard import register_from_env
from mosaic_sdk.runner.storage.records import ObserverRecord, RunCounts
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter

if TYPE_CHECKING:
    import pluggy


@dataclass(frozen=True)
class RecorderOptions:
    """How a run is recorded. ``batch_lines``: a batch goes to the writer at this many lines;
    ``flush_interval``: at the latest this long (s) after its first line; ``busy_timeout``:
    SQLite's wait for its write lock (s); ``step_frames``: publish step lines'
    ``render_payload`` to FastLane; ``stall_after``: the stall limit (s; 0: none; None: from
    the worker's heartbeat interval)."""

    batch_lines: int = 256
    flush_interval: float = 0.1
    busy_timeout: float = 1.0
    step_frames: bool = False
    stall_after: float | None = None


@dataclass
class RecordedEnd:
    """What :meth:`RunRecorder.finish` stored: the final status, its error, the stored counts
    and one report per observer plugin."""

    status: str
    error: str | None
    counts: RunCounts
    observers: list[ObserverRecord] = field(default_factory=list)
    #: The event the runner stored for the worker (``["run_failed"]``...), if any.
    synthesised: list[str] = field(default_factory=list)


class RunRecorder:
    """Records one run's output into the store, down one chain: ``StoreBatcher``
    (``recorder.stdout``) -> ``LineIngest`` -> ``StoreWriter`` -> ``Notify``; stderr lines go
    to the writer through ``recorder.stderr``. The run ends with :meth:`end` or :meth:`finish`.
    ``pm``: whose observers and event hooks hear of the run (None: nobody)."""

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        worker: str,
        pm: pluggy.PluginManager | None = None,
        options: RecorderOptions | None = None,
        listener: RunListener | None = None,
    ) -> None:
        options = options or RecorderOptions()
        listener = listener or RunListener()
        self.store = store
        self.run_id = run_id
        self.warn = warn = listener.warn
        if pm is not None:  # MOSAIC_TENSORBOARD_DIR (mosaic run --tensorboard): an observer
            register_from_env(pm)
        #: The observer plugins of the run (None when no plugin observes).
        self.feed = None if pm is None else ObserverFeed.for_plugins(pm, run_id, warn=warn)
        #: Step lines' ``render_payload`` published to the run's FastLane stream, if asked.
        self.frames = StepFrames(run_id, warn=warn) if options.step_frames else None
        # the chain, from its end: notify <- write <- parse <- batch
        stages = [stage.offer for stage in (self.feed, self.frames) if stage is not None]
        self.notify = Notify(run_id, worker, pm, warn, *stages)
        self.writer = StoreWriter(
            store.path,
            run_id,
            busy_timeout=options.busy_timeout,
            abandon=listener.abandoning,
            report=warn,
            on_commit=self.notify.committed if pm is not None or stages else None,
        )
        self.ingest = LineIngest(run_id, on_control_reply=listener.control_reply)
        #: When the last line and heartbeat arrived; stalled or not.
        self.health = RunHealth(options.stall_after)
        #: The stdout side, a :class:`~mosaic_sdk.runner.supervision.lifecycle.RunObserver`.
        self.stdout = StoreBatcher(
            self.ingest,
            self.writer,
            self.notify,
            self.health,
            listener,
            batch_lines=options.batch_lines,
            flush_interval=options.flush_interval,
        )
        #: The stderr side: ``stderr(lines, partial)`` queues the lines as log rows.
        self.stderr = StderrIngest(run_id, self.writer)
        self._finished: RecordedEnd | None = None

    # -- what arrives as messages (a Ray trial's, no read loop here) ---------------------------
    def add_stdout(self, lines: list[bytes], partial: bool = False) -> None:
        """Record stdout lines that arrived together (hands them to the writer at once)."""
        batcher = self.stdout
        batcher.on_lines(lines, time.monotonic(), False, partial)
        batcher.on_pass(time.monotonic(), True)
        self.notify.deliver()

    def health_event(self, change: dict[str, Any]) -> None:
        """Store a change of the run's health noticed elsewhere (a Ray trial's node)."""
        self.stdout.health_changed(change)

    def check(self) -> None:
        """Deliver the events committed since the last call (and warn once if the writer
        stopped): call it now and then when no read loop does."""
        self.stdout.on_check(time.monotonic())

    # -- the end ----------------------------------------------------------------------------
    def end(
        self,
        exit_code: int | None,
        *,
        cancel_reason: str | None,
        stderr_tail: str = "",
        start_error: str | None = None,
        timed_out: str | None = None,
        stalled: str | None = None,
        notes: Sequence[str] = (),
        note_error: str | None = None,
        abandon: Callable[[], bool] | None = None,
    ) -> RecordedEnd:
        """Decide the run's final status from what it wrote (:func:`~.outcome.decide`) and
        store it (:meth:`finish`): the end of a run whose worker has exited."""
        ingest = self.ingest
        outcome = decide(
            self.run_id,
            terminal=ingest.terminal_event,
            exit_code=exit_code,
            cancel_reason=cancel_reason,
            stderr_tail=stderr_tail,
            episodes=ingest.episodes,
            start_error=start_error,
            telemetry_lines=ingest.steps
            + ingest.episodes
            + ingest.unfinished_episodes
            + ingest.events
            - self.stdout.health_events,
            other_lines=ingest.log_lines,
            timed_out=timed_out,
            stalled=stalled,
        )
        return self.finish(outcome, exit_code, notes=notes, note_error=note_error, abandon=abandon)

    def finish(
        self,
        outcome: Outcome,
        exit_code: int | None,
        *,
        notes: Sequence[str] = (),
        note_error: str | None = None,
        abandon: Callable[[], bool] | None = None,
    ) -> RecordedEnd:
        """Store the end of the run: ``outcome``'s event, ``notes`` as stderr lines (``error`` =
        ``note_error``), the rest of the rows, the observers' reports and the final status.
        Waits for the writer (``abandon()`` true: no longer) and the observers."""
        if self._finished is not None:
            return self._finished
        final = LineBatch(serial=self.stdout.serial + 1)  # after every batch handed over
        if outcome.synthesised is not None:
            self.ingest.add_synthesised(final, outcome.synthesised)
        stderr = self.stderr
        for text in notes:
            stderr.line_no += 1
            final.logs.append((self.run_id, "stderr", stderr.line_no, "log", 0, note_error, text))
            final.stderr += 1
        writer = self.writer
        writer.submit(final)
        writer.close(abandon=abandon)
        self.stdout.check_writer()
        if self.frames is not None:
            self.frames.close()
        self.notify.deliver(final=True)
        if outcome.synthesised is not None:
            self.notify.event(outcome.synthesised)
        observers = [] if self.feed is None else self.feed.close()
        if observers:
            self.store.record_observers(self.run_id, observers)
        # rows the store could not take make the record incomplete: a failed run
        status, error, counts = record_end(
            self.store, self.run_id, outcome, exit_code, writer.lost_rows, writer.error, self.warn
        )
        synthesised = [outcome.synthesised["event"]] if outcome.synthesised else []
        self._finished = RecordedEnd(status, error, counts, observers, synthesised)
        return self._finished

    def close(self, timeout: float = 5.0) -> None:
        """Release the writer and the observers without recording an end (after a failure of
        the runner itself; does nothing more after :meth:`finish`)."""
        self.writer.close(timeout=timeout)
        if self.feed is not None:
            self.feed.close(timeout=0)
        if self.frames is not None:
            self.frames.close(timeout=0)  # removes its FastLane segment, whatever happened
