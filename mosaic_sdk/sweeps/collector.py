"""The driver's side of remote trials: messages from trial attempts in, store rows out."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mosaic_sdk.runner.recording.outcome import Outcome, failed_event, lifecycle_event
from mosaic_sdk.runner.recording.recorder import (
    RecordedEnd,
    RecorderOptions,
    RunListener,
    RunRecorder,
)
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.spec import Metric
from mosaic_sdk.sweeps.store import SweepStore

if TYPE_CHECKING:
    import pluggy

Message = tuple[Any, ...]
#: Longest wait for the store's write lock inside SQLite (s) before a writer backs off.
BUSY_WAIT = 10.0


@dataclass
class _Attempt:
    """One attempt being stored: its recorder and its trial."""

    recorder: RunRecorder
    trial_key: str

    @property
    def run_id(self) -> str:
        return self.recorder.run_id


@dataclass(eq=False)
class Collector:
    """Store the messages of remote trial attempts (thread-safe), by run id in order:
    ``("start", run_id, info)``, ``("pid", run_id, pid)``, ``("out"|"err", run_id, lines,
    partial)``, ``("health", run_id, change)`` and ``("end", run_id, info)``. Each attempt is
    an ordinary run with its own ``RunRecorder``; one whose messages stop without ``end`` is
    closed by :meth:`lost`."""

    store_path: Path
    worker: str
    sweep_id: str
    metric: Metric
    _: KW_ONLY
    #: the spec's pruner type: an attempt its scheduler stopped is stored ``pruned``
    pruner: str | None = None
    report: Callable[[str], None] = print
    pm: pluggy.PluginManager | None = None
    #: The attempts' stall limit here (0 when the trials' nodes enforce it).
    stall_after: float | None = None

    def __post_init__(self) -> None:
        self.store_path = Path(self.store_path)
        self.runs = RunStore(self.store_path)
        self.sweeps = SweepStore(self.runs)
        self._open: dict[str, _Attempt] = {}
        self._lock = threading.Lock()
        #: Set by the engine when the whole sweep is being cancelled (Ctrl-C).
        self.sweep_cancelled = False

    def close(self) -> None:
        """Release the store (and the writers of attempts left open, whose end is unknown)."""
        with self._lock:
            for attempt in self._open.values():
                attempt.recorder.close()
        self.runs.close()

    def handle(self, messages: list[Message]) -> None:
        with self._lock:
            self._handle(messages)
            for attempt in self._open.values():  # hooks of what was committed meanwhile
                attempt.recorder.check()

    def _handle(self, messages: list[Message]) -> None:
        for msg in messages:
            kind, run_id = msg[0], msg[1]
            if kind == "start":
                self._start(run_id, msg[2])
                continue
            attempt = self._open.get(run_id)
            if attempt is None:  # after a loss was declared: nothing more to store
                continue
            if kind == "out":
                attempt.recorder.add_stdout(msg[2], msg[3])
            elif kind == "pid":
                self.runs.set_worker_pid(run_id, msg[2])
            elif kind == "err":
                attempt.recorder.stderr(msg[2], msg[3])
            elif kind == "health":  # the trial's node noticed a stall (trial_stall_after)
                attempt.recorder.health_event(msg[2])
            elif kind == "end":
                self._end(attempt, msg[2])

    def open_attempts(self, trial_key: str | None = None) -> list[str]:
        with self._lock:
            return [
                a.run_id
                for a in self._open.values()
                if trial_key is None or a.trial_key == trial_key
            ]

    def lost(self, run_id: str, why: str, status: str = "failed") -> None:
        """Close an attempt that will send nothing more (``failed``, or ``cancelled`` when the
        sweep was interrupted), with what it had sent and a synthesised event saying why."""
        with self._lock:
            attempt = self._open.pop(run_id, None)
            if attempt is None:
                return
            if status == "cancelled":
                payload = {"reason": why, "by": "mosaic sweep"}
                event = lifecycle_event(run_id, "run_cancelled", payload)
            else:
                event = failed_event(run_id, why, "TrialLost", None)
            outcome = Outcome(status, why, event)
            self._close(attempt, attempt.recorder.finish(outcome, None), stopped_early=False)

    def _start(self, run_id: str, info: dict[str, Any]) -> None:
        self.runs.create_run(
            run_id,
            self.worker,
            run_dir=Path(info["run_dir"]),
            config=info["config"],
            argv=info["argv"],
            stderr_path=Path(info["run_dir"]) / "stderr.log",
        )
        self.sweeps.add_attempt(
            self.sweep_id,
            info["trial_key"],
            run_id,
            info["params"],
            node=info["node"],
            parent_run_id=info.get("parent_run_id"),
        )
        # One writer per attempt on one store: they take turns at SQLite's write lock, so wait
        # for it inside SQLite (BUSY_WAIT) rather than in the writer's backoff.
        recorder = RunRecorder(
            self.runs,
            run_id,
            self.worker,
            self.pm,
            RecorderOptions(batch_lines=4096, busy_timeout=BUSY_WAIT, stall_after=self.stall_after),
            RunListener(),
        )
        self._open[run_id] = _Attempt(recorder, info["trial_key"])

    def _end(self, attempt: _Attempt, info: dict[str, Any]) -> None:
        del self._open[attempt.run_id]
        end = attempt.recorder.end(
            info.get("exit_code"),
            cancel_reason=info.get("cancel_reason"),
            stderr_tail=info.get("stderr_tail", ""),
            start_error=info.get("start_error"),
            timed_out=info.get("timed_out"),
            stalled=info.get("stalled"),
        )
        stopped = bool(info.get("cancel_reason")) and not self.sweep_cancelled
        pruned = info.get("pruned")
        pruned = (float(pruned[0]), int(pruned[1])) if stopped and pruned else None
        self._close(attempt, end, stopped_early=stopped, pruned=pruned)

    def _close(
        self,
        attempt: _Attempt,
        end: RecordedEnd,
        *,
        stopped_early: bool,
        pruned: tuple[float, int] | None = None,
    ) -> None:
        """Store the attempt's trial row from its stored end, and tell the user."""
        status, error = end.status, end.error
        metric = self.sweeps.metric_of_run(attempt.run_id, self.metric)
        # a run the scheduler cancelled is a trial ``stopped``
        tstatus = "stopped" if status == "cancelled" and stopped_early else status
        if pruned is not None and status == "cancelled":  # as the local engine stores it
            metric, step = pruned
            tstatus = "pruned"
            error = (
                f"pruned by the {self.pruner or 'early-stopping'} pruner at step {step} "
                f"({self.metric.name} {metric:.4g})"
            )
        self.sweeps.finish_attempt(attempt.run_id, tstatus, metric, error)
        shown = "-" if metric is None else f"{metric:.4g}"
        why = f" ({error})" if error and status != "completed" else ""
        self.report(
            f"trial {attempt.trial_key} {tstatus}{why}: {self.metric.name} {shown}, "
            f"{attempt.recorder.ingest.episodes} episodes; run {attempt.run_id}"
        )
