"""The driver's side of remote trials: messages from trial attempts in, store rows out.

A trial attempt that runs elsewhere (a Ray node) supervises its worker there and sends the
driver what it sees, in order, as messages keyed by the attempt's run id:

- ``("start", run_id, info)``: the attempt began (``info``: trial key, params, config, argv,
  node, worker pid, run dir);
- ``("pid", run_id, pid)``: the worker's process id, once it started;
- ``("out", run_id, lines, partial)``: a batch of stdout lines (bytes, without newlines);
- ``("err", run_id, lines, partial)``: a batch of stderr lines;
- ``("end", run_id, info)``: the worker ended (``info``: exit code, the reason it was asked to
  stop, the tail of stderr, warnings).

:class:`Collector` turns them into an ordinary run: the run row, the rows of the runner's own
:class:`~mosaic_sdk.runner.ingest.LineIngest` committed by a
:class:`~mosaic_sdk.runner.ingest.StoreWriter`, and the final status decided by
:func:`~mosaic_sdk.runner.outcome.decide`, exactly as for ``mosaic run``. An attempt whose
messages stop without an ``end`` (its node was lost) is closed by :meth:`Collector.lost`:
stored ``failed`` with everything it had sent and a synthesised ``run_failed`` saying why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mosaic_sdk.runner.ingest import LineBatch, LineIngest, StderrIngest, StoreWriter
from mosaic_sdk.runner.outcome import decide, lifecycle_event, record_end
from mosaic_sdk.runner.store import RunStore
from mosaic_sdk.sweeps.spec import Metric
from mosaic_sdk.sweeps.store import SweepStore, trial_status

Message = tuple[Any, ...]
#: Longest wait for the store's write lock inside SQLite (s) before a writer backs off.
BUSY_WAIT = 10.0


class _Attempt:
    """One attempt being stored: its ingest, its writer, what it said so far."""

    def __init__(self, run_id: str, store_path: Path, trial_key: str, batch_lines: int) -> None:
        self.run_id = run_id
        self.trial_key = trial_key
        # One writer per attempt, all on the driver's one store: they take turns at SQLite's
        # write lock, so wait for it inside SQLite (BUSY_WAIT) rather than in the writer's
        # backoff, which is made for another process holding the lock for long.
        self.writer = StoreWriter(store_path, run_id, busy_timeout=BUSY_WAIT)
        self.ingest = LineIngest(run_id)
        self.stderr = StderrIngest(run_id, self.writer)
        self.batch_lines = batch_lines
        self.lines = 0

    def out(self, lines: list[bytes], partial: bool) -> None:
        start, total = 0, len(lines)
        while start < total:
            end = min(total, start + self.batch_lines)
            batch = LineBatch()
            self.ingest.add(batch, lines[start:end], partial_last=partial and end == total)
            self.writer.submit(batch)
            start = end
        self.lines += total


class Collector:
    """Store the messages of remote trial attempts (see the module docstring). Thread-safe."""

    def __init__(
        self,
        store_path: Path,
        worker: str,
        sweep_id: str,
        metric: Metric,
        *,
        report: Callable[[str], None] = print,
        batch_lines: int = 4096,
    ) -> None:
        self.store_path = Path(store_path)
        self.worker = worker
        self.sweep_id = sweep_id
        self.metric = metric
        self.report = report
        self.batch_lines = batch_lines
        self.runs = RunStore(self.store_path)
        self.sweeps = SweepStore(self.runs)
        self._open: dict[str, _Attempt] = {}
        self._lock = threading.Lock()
        #: Set by the engine when the whole sweep is being cancelled (Ctrl-C).
        self.sweep_cancelled = False
        #: Lines received per attempt (for the ingest benchmark and the tests).
        self.lines_received = 0

    def close(self) -> None:
        self.runs.close()

    def handle(self, messages: list[Message]) -> None:
        with self._lock:
            for msg in messages:
                kind, run_id = msg[0], msg[1]
                if kind == "start":
                    self._start(run_id, msg[2])
                    continue
                attempt = self._open.get(run_id)
                if attempt is None:  # after a loss was declared: nothing more to store
                    continue
                if kind == "out":
                    attempt.out(msg[2], msg[3])
                    self.lines_received += len(msg[2])
                elif kind == "pid":
                    self.runs.set_worker_pid(run_id, msg[2])
                elif kind == "err":
                    attempt.stderr(msg[2], msg[3])
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
            attempt = self._open.get(run_id)
            if attempt is None:
                return
            if status == "cancelled":
                event = lifecycle_event(
                    run_id, "run_cancelled", {"reason": why, "by": "mosaic sweep"}
                )
                self._close(attempt, status, why, None, event, stopped_early=False)
                return
            event = lifecycle_event(
                run_id,
                "run_failed",
                {
                    "error": why,
                    "error_type": "TrialLost",
                    "exit_code": None,
                    "stderr_tail": "",
                    "traceback": None,
                    "episode": None,
                    "step": None,
                },
            )
            self._close(attempt, "failed", why, None, event, stopped_early=False)

    # -- per message ------------------------------------------------------------------------
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
            self.sweep_id, info["trial_key"], run_id, info["params"], node=info["node"]
        )
        self._open[run_id] = _Attempt(run_id, self.store_path, info["trial_key"], self.batch_lines)

    def _end(self, attempt: _Attempt, info: dict[str, Any]) -> None:
        outcome = decide(
            attempt.run_id,
            terminal=attempt.ingest.terminal_event,
            exit_code=info.get("exit_code"),
            cancel_reason=info.get("cancel_reason"),
            stderr_tail=info.get("stderr_tail", ""),
            episodes=attempt.ingest.episodes,
            start_error=info.get("start_error"),
            telemetry_lines=attempt.ingest.steps + attempt.ingest.episodes + attempt.ingest.events,
            other_lines=attempt.ingest.log_lines,
            timed_out=info.get("timed_out"),
        )
        stopped = bool(info.get("cancel_reason")) and not self.sweep_cancelled
        self._close(
            attempt,
            outcome.status,
            outcome.error,
            info.get("exit_code"),
            outcome.synthesised,
            stopped_early=stopped,
        )

    def _close(
        self,
        attempt: _Attempt,
        status: str,
        error: str | None,
        exit_code: int | None,
        synthesised: dict[str, Any] | None,
        *,
        stopped_early: bool,
    ) -> None:
        from mosaic_sdk.runner.outcome import Outcome

        del self._open[attempt.run_id]
        if synthesised is not None:
            final = LineBatch()
            attempt.ingest.add_synthesised(final, synthesised)
            attempt.writer.submit(final)
        attempt.writer.close()
        status, error, _ = record_end(
            self.runs,
            attempt.run_id,
            Outcome(status, error, synthesised),
            exit_code,
            attempt.writer.lost_rows,
            attempt.writer.error,
        )
        metric = self.sweeps.metric_of_run(attempt.run_id, self.metric)
        tstatus = trial_status(status, stopped_early)
        self.sweeps.finish_attempt(attempt.run_id, tstatus, metric, error)
        shown = "-" if metric is None else f"{metric:.4g}"
        why = f" ({error})" if error and status != "completed" else ""
        self.report(
            f"trial {attempt.trial_key} {tstatus}{why}: {self.metric.name} {shown}, "
            f"{attempt.ingest.episodes} episodes; run {attempt.run_id}"
        )


__all__ = ["Collector", "Message"]
