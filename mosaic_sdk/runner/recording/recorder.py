"""One run's output, from the worker's lines to the store: :class:`RunRecorder`.

Every run is recorded by a :class:`RunRecorder`, whoever supervises its worker:

- ``mosaic run`` (:class:`~mosaic_sdk.runner.supervisor.RunSupervisor`, and through it the
  trials of a local sweep) hands :attr:`RunRecorder.stdout` to its
  :class:`~mosaic_sdk.runner.supervision.lifecycle.RunLifecycle` as the lifecycle's observer and
  :attr:`RunRecorder.stderr` as its stderr callback;
- a Ray trial supervises its worker on its node and sends the lines to the driver, whose
  :class:`~mosaic_sdk.sweeps.collector.Collector` passes each message on to the attempt's
  recorder (:meth:`RunRecorder.add_stdout`, :attr:`RunRecorder.stderr`,
  :meth:`RunRecorder.check`, :meth:`RunRecorder.finish`).

Control sessions (``mosaic play``, :class:`~mosaic_sdk.control.session.Session`) and the
conformance suite's recordings store no rows, so they have no recorder.

What it owns, per run:

- parsing: :class:`~mosaic_sdk.runner.recording.ingest.LineIngest` (stdout) and
  :class:`~mosaic_sdk.runner.recording.ingest.StderrIngest`;
- batching: :class:`~mosaic_sdk.runner.recording.batching.StoreBatcher`;
- the store writer: :class:`~mosaic_sdk.runner.storage.writer.StoreWriter`, its thread;
- the observers: an :class:`~mosaic_sdk.runner.recording.observers.ObserverFeed` for the plugins
that
  implement ``mosaic_telemetry_steps`` / ``mosaic_telemetry_episodes``, fed by the writer
  after each commit, and ``mosaic_telemetry_event`` for every lifecycle event once the batch
  holding it is committed (synthesised events included);
- the run's health (:class:`~mosaic_sdk.runner.recording.health.RunHealth`): when its last
  line and heartbeat arrived, checked at every check of the read loop (or :meth:`check`); a
  run past its stall limit gets a synthesised ``stalled`` event (``recovered`` when lines
  come again), a warning, and ``on_stall(reason)`` is called (the supervisor then stops it);
- the end: :meth:`RunRecorder.decide` (:func:`~mosaic_sdk.runner.recording.outcome.decide` on what
the
  ingest saw) and :meth:`RunRecorder.finish`, which stores the synthesised event and the
  runner's notes, closes the writer, runs the last hooks, stores the observers' reports and
  the final status (:func:`~mosaic_sdk.runner.recording.outcome.record_end`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mosaic_sdk.runner.recording.batching import StoreBatcher
from mosaic_sdk.runner.recording.health import STALLED_EVENT, RunHealth, stall_reason
from mosaic_sdk.runner.recording.ingest import LineIngest, StderrIngest
from mosaic_sdk.runner.recording.observers import ObserverFeed
from mosaic_sdk.runner.recording.outcome import Outcome, decide, lifecycle_event, record_end
from mosaic_sdk.runner.recording.step_frames import StepFrames, on_commit_all
from mosaic_sdk.runner.recording.tensorboard import register_from_env
from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage.records import ObserverRecord, RunCounts
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter

if TYPE_CHECKING:
    import pluggy

EVENT_HOOK = "mosaic_telemetry_event"


@dataclass
class RecordedEnd:
    """What :meth:`RunRecorder.finish` stored: the final status, its error, the stored counts
    and one report per observer plugin."""

    status: str
    error: str | None
    counts: RunCounts
    observers: list[ObserverRecord] = field(default_factory=list)


class RunRecorder:
    """Records one run's output into the store (see the module docstring).

    ``store`` is the run's :class:`RunStore` (the run row exists); ``pm`` the plugin manager
    whose observers and event hooks hear of the run (None: nobody does). ``abandon()`` tells
    the writer that the run is being given up (it then stops waiting for a stalled store);
    ``on_tick`` is called at every check of the read loop (the live view).
    ``stall_after`` is the stall limit (s; 0: none; None: from the worker's declared heartbeat
    interval, see :mod:`~mosaic_sdk.runner.recording.health`); ``on_stall(reason)`` is called
    when the run stalls (None: it is only marked and reported).
    """

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        worker: str,
        pm: pluggy.PluginManager | None = None,
        *,
        batch_lines: int = 256,
        flush_interval: float = 0.1,
        busy_timeout: float = 1.0,
        abandon: Callable[[], bool] | None = None,
        on_control_reply: Callable[[dict[str, Any]], None] | None = None,
        on_tick: Callable[[], None] | None = None,
        warn: Callable[[str], None] | None = None,
        step_frames: bool = False,
        stall_after: float | None = None,
        on_stall: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.worker = worker
        self.pm = pm
        self.warn = warn or current_reporter().warn
        if pm is not None:  # MOSAIC_TENSORBOARD_DIR (mosaic run --tensorboard): an observer
            register_from_env(pm)
        #: The observer plugins of the run (None when no plugin observes).
        self.feed = None if pm is None else ObserverFeed.for_plugins(pm, run_id, warn=self.warn)
        feed = self.feed
        #: Step lines' ``render_payload`` published to the run's FastLane stream (a worker
        #: that writes no FastLane itself still gets a live view); None when not asked for.
        self.frames = StepFrames(run_id, warn=self.warn) if step_frames else None
        self.writer = StoreWriter(
            store.path,
            run_id,
            busy_timeout=busy_timeout,
            abandon=abandon,
            report=self.warn,
            on_commit=on_commit_all(
                None if feed is None else feed.offer,
                None if self.frames is None else self.frames.offer,
            ),
        )
        self.ingest = LineIngest(run_id, on_control_reply=on_control_reply)
        #: When the last line and heartbeat arrived; stalled or not (see module docstring).
        self.health = RunHealth(stall_after)
        self.on_stall = on_stall
        self.health_events = 0  # the stalled/recovered events stored (not the worker's)
        #: The stderr callback: ``stderr(lines, partial)`` queues the lines as log rows.
        self.stderr = StderrIngest(run_id, self.writer)
        #: The stdout side, a :class:`~mosaic_sdk.runner.supervision.lifecycle.RunObserver`: give it
        # to : the run's lifecycle (or call :meth:`add_stdout`).
        self.stdout = StoreBatcher(
            run_id,
            self.writer,
            self.ingest,
            batch_lines=batch_lines,
            flush_interval=flush_interval,
            on_event=self.event,
            on_tick=on_tick or _nothing,
            warn=self.warn,
            health=self.health,
            on_health=self.health_event,
        )
        self._finished: RecordedEnd | None = None

    # -- hooks ------------------------------------------------------------------------------
    def event(self, event: dict[str, Any]) -> None:
        """``mosaic_telemetry_event`` for one committed lifecycle event (a plugin that raises
        is warned about; the run goes on)."""
        if self.pm is None:
            return
        try:
            self.pm.hook.mosaic_telemetry_event(run_id=self.run_id, worker=self.worker, event=event)
        except Exception as exc:  # noqa: BLE001 - a plugin's bug must not stop the run
            self.warn(f"a {EVENT_HOOK} hook raised {type(exc).__name__}: {exc} (the run goes on)")

    def health_event(self, change: dict[str, Any]) -> None:
        """Store a change of the run's health (a :meth:`RunHealth.check` payload, with its
        ``event`` key), warn, and call ``on_stall`` for a stall. A Ray trial's health is
        checked on its node, which sends the change here."""
        payload = dict(change)
        name = str(payload.pop("event"))
        self.stdout.add_event(lifecycle_event(self.run_id, name, payload))
        self.health_events += 1
        if name == STALLED_EVENT:
            reason = stall_reason(payload)
            then = "; stopping it" if self.on_stall is not None else ""
            self.warn(f"run {self.run_id} {reason}{then}")
            if self.on_stall is not None:
                self.on_stall(reason)
        else:
            self.warn(
                f"run {self.run_id} is writing again after {payload['silent_seconds']:g} s "
                "of silence (recovered)"
            )

    # -- lines that arrive as messages (no read loop) ------------------------------------------
    def add_stdout(self, lines: list[bytes], partial: bool = False) -> None:
        """Record stdout lines that arrived together (hands them to the writer at once)."""
        batcher = self.stdout
        batcher.on_lines(lines, time.monotonic(), False, partial)
        batcher.on_pass(time.monotonic(), True)
        batcher.run_due_hooks()

    def check(self) -> None:
        """Run the hooks of the batches committed since the last call (and warn once if the
        writer stopped): call it now and then when no read loop does."""
        self.stdout.on_check(time.monotonic())

    # -- the end ----------------------------------------------------------------------------
    def decide(
        self,
        *,
        exit_code: int | None,
        cancel_reason: str | None,
        stderr_tail: str = "",
        start_error: str | None = None,
        timed_out: str | None = None,
        stalled: str | None = None,
    ) -> Outcome:
        """The run's final status from what it wrote (see :func:`decide`); ``timed_out`` is
        the reason a time limit stopped the run, ``stalled`` the reason its stall limit did."""
        ingest = self.ingest
        return decide(
            self.run_id,
            terminal=ingest.terminal_event,
            exit_code=exit_code,
            cancel_reason=cancel_reason,
            stderr_tail=stderr_tail,
            episodes=ingest.episodes,
            start_error=start_error,
            telemetry_lines=ingest.steps + ingest.episodes + ingest.events - self.health_events,
            other_lines=ingest.log_lines,
            timed_out=timed_out,
            stalled=stalled,
        )

    def finish(
        self,
        outcome: Outcome,
        exit_code: int | None,
        *,
        notes: Sequence[str] = (),
        note_error: str | None = None,
        abandon: Callable[[], bool] | None = None,
    ) -> RecordedEnd:
        """Store the end of the run: the synthesised event of ``outcome`` (if any), ``notes``
        as stderr lines (``error`` = ``note_error``: they were not written by the worker), the
        rest of the rows, the observers' reports and the final status. Waits for the writer
        (``abandon()`` true: stop waiting for a stalled store) and for the observers."""
        if self._finished is not None:
            return self._finished
        final = self.stdout.final_batch()
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
        if self.frames is not None:
            self.frames.close()
        self.stdout.run_due_hooks(final=True)
        if outcome.synthesised is not None:
            self.event(outcome.synthesised)
        observers = [] if self.feed is None else self.feed.close()
        if observers:
            self.store.record_observers(self.run_id, observers)
        # rows the store could not take make the record incomplete: a failed run
        status, error, counts = record_end(
            self.store, self.run_id, outcome, exit_code, writer.lost_rows, writer.error, self.warn
        )
        self._finished = RecordedEnd(status, error, counts, observers)
        return self._finished

    def close(self, timeout: float = 5.0) -> None:
        """Release the writer and the observers without recording an end (after a failure of
        the runner itself; does nothing more after :meth:`finish`)."""
        self.writer.close(timeout=timeout)
        if self.feed is not None:
            self.feed.close(timeout=0)
        if self.frames is not None:
            self.frames.close(timeout=0)  # removes its FastLane segment, whatever happened


def _nothing() -> None:
    pass


__all__ = ["EVENT_HOOK", "RecordedEnd", "RunRecorder"]
