"""``run_worker``: run one worker to the end, storing everything it writes (``mosaic run``).

Ctrl-C, SIGTERM, SIGHUP (or :meth:`RunSupervisor.cancel`) send the worker SIGTERM, then SIGKILL
its process group ``grace`` seconds later; a second Ctrl-C kills at once.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.control.run_control import RunControl, claimed_protocol
from mosaic_sdk.runner.live import Display, NullDisplay, Snapshot
from mosaic_sdk.runner.recording.health import STALL_ACTIONS, checked_stall_after
from mosaic_sdk.runner.recording.outcome import RunResult
from mosaic_sdk.runner.recording.recorder import RecorderOptions, RunListener, RunRecorder
from mosaic_sdk.runner.reporting import Reporter, current_reporter
from mosaic_sdk.runner.storage import private
from mosaic_sdk.runner.storage.paths import default_store_path, runs_dir_for
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervision.launch import ResolvedJob, prepare_run, resolve_job
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle
from mosaic_sdk.runner.supervision.lines import DEFAULT_MAX_LINE
from mosaic_sdk.runner.supervision.process import WorkerProcess
from mosaic_sdk.runner.supervision.resolve import WorkerProtocolError, resolve_worker
from mosaic_sdk.runner.supervision.signals import install_stop_handlers

#: The ``error`` of a log line that mosaic run wrote into a run's stderr, not the worker.
RUNNER_NOTE = "written by mosaic run, not the worker"


class RunSupervisor(RunListener):
    """One run of one worker, listening to its recorder; use :func:`run_worker`."""

    def __init__(
        self,
        handle: WorkerHandle,
        config: Mapping[str, Any] | ResolvedJob | None = None,
        *,
        run_id: str | None = None,
        store: Path | str | None = None,
        runs_dir: Path | None = None,
        grace: float = 10.0,
        display: Display | None = None,
        batch_lines: int = 256,
        flush_interval: float = 0.1,
        extra_env: dict[str, str] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE,
        keys: bool = False,
        reporter: Reporter | None = None,
        time_limit: float | None = None,
        stall_after: float | None = None,
        on_stall: str = "warn",
    ) -> None:
        self.reporter = reporter or current_reporter()
        super().__init__(self.reporter.warn)
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be >= 1, got {max_line_bytes}")
        self.max_line_bytes = max_line_bytes
        self.keys = keys
        if batch_lines < 1 or not flush_interval > 0 or not 0 <= grace < math.inf:
            raise ValueError(
                "batch_lines >= 1, flush_interval > 0 and a finite grace >= 0 are required "
                f"(got {batch_lines}, {flush_interval}, {grace})"
            )
        self.handle = handle
        self.grace = grace
        #: Seconds before the worker is stopped as on a cancel (the run ends ``failed``).
        self.time_limit = time_limit
        if on_stall not in STALL_ACTIONS:
            allowed = ", ".join(STALL_ACTIONS)
            raise ValueError(f"on_stall must be one of {allowed}, got {on_stall!r}")
        self.on_stall = on_stall
        self._stall_reason: str | None = None
        self.display = display or NullDisplay()
        self.recording = RecorderOptions(
            batch_lines=batch_lines,
            flush_interval=flush_interval,
            step_frames=True,
            stall_after=checked_stall_after(stall_after),
        )
        self.pm = handle.pm
        self._cancel_reason: str | None = None
        self._kill_now = False
        self._lifecycle: RunLifecycle | None = None
        self._control: RunControl | None = None
        self._recorder: RunRecorder | None = None
        self._started = 0.0  # (monotonic) when run() began: the live view's elapsed time

        job = resolve_job(config, run_id=run_id)
        rid = job.run_id
        if store is None:
            store = default_store_path()
            private.make_dir(store.parent)
        self.store_path = Path(store)
        self.store = RunStore(self.store_path)
        # Claim the id first (one INSERT: of two runners with one id, one gets it).
        runs_root = (runs_dir or runs_dir_for(self.store_path)).absolute()
        try:
            self.store.create_run(
                rid, handle.name, run_dir=runs_root / rid, control_protocol=claimed_protocol(handle)
            )
        except BaseException:
            self.store.close()
            raise
        try:
            self.prepared = prepare_run(
                handle, job, runs_dir=runs_root, extra_env=extra_env, exclusive=True
            )
            self.stderr_path = self.prepared.run_dir / "stderr.log"
            private.create_file(self.stderr_path)
            self.store.set_launch(
                rid, self.prepared.config.to_dict(), self.prepared.argv, self.stderr_path
            )
        except BaseException:
            self.store.delete_run(rid)
            self.store.close()
            raise
        self.run_id = self.prepared.run_id

    def cancel(self, reason: str = "cancelled") -> None:
        """Ask the run to stop (thread-safe; a second call kills the worker at once)."""
        if self._cancel_reason is not None:
            self._kill_now = True
        else:
            self._cancel_reason = reason
        lifecycle = self._lifecycle
        if lifecycle is not None:
            self._forward_cancel(lifecycle)

    def _forward_cancel(self, lifecycle: RunLifecycle) -> None:
        if self._cancel_reason is not None:
            lifecycle.request_stop(self._cancel_reason)
        if self._kill_now:
            lifecycle.kill()

    def abandoning(self) -> bool:
        return self._cancel_reason is not None

    def control_reply(self, reply: dict[str, Any]) -> None:
        if self._control is not None:
            self._control.relay.on_reply(reply)

    def tick(self) -> None:
        if self._recorder is not None:
            self.display.update(self._snapshot(self._recorder))

    def stalled(self, reason: str) -> bool:
        """``--on-stall cancel``: stop the worker as a cancel does; the run ends ``failed``."""
        if self.on_stall != "cancel":
            return False
        lifecycle = self._lifecycle
        if lifecycle is not None and lifecycle.request_stop(reason):
            self._stall_reason = reason
        return True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.cancel(f"{name} received by mosaic run")

    def run(self) -> RunResult:
        """Start the worker, supervise it to the end, and return the result."""
        prepared = self.prepared
        started = self._started = time.monotonic()
        self.store.mark_started(self.run_id)
        warn = self.reporter.warn
        control = self._control = RunControl(
            self.handle, prepared.run_dir, keys=self.keys, warn=warn, cancel=self.cancel
        )
        try:
            recorder = self._recorder = RunRecorder(
                self.store,
                self.run_id,
                self.handle.name,
                self.pm,
                self.recording,
                listener=self,
            )
        except BaseException:
            control.close()
            raise
        restore = install_stop_handlers(self._on_signal)
        lifecycle = RunLifecycle(
            self.handle,
            prepared,
            recorder.stdout,
            stderr_path=self.stderr_path,
            on_stderr_lines=recorder.stderr,
            max_line_bytes=self.max_line_bytes,
            grace=self.grace,
            time_limit=self.time_limit,
            stdin_pipe=control.stdin_pipe,
        )
        self._lifecycle = lifecycle
        self._forward_cancel(lifecycle)
        proc: WorkerProcess | None = None
        start_error: str | None = None
        try:
            try:
                proc = lifecycle.start()
            except RuntimeError as exc:
                start_error = f"{exc}; check the worker's launch command (mosaic workers show)"
            if proc is not None:
                self.store.set_worker_pid(self.run_id, proc.pid)
                control.attach(proc)
                lifecycle.supervise()
                control.relay.end("its worker has exited")
                exit_code = lifecycle.finish()
                stderr_tail = proc.stderr_text(limit=20)
                warnings = proc.stderr_problems()
            else:
                exit_code, stderr_tail, warnings = None, "", []
            cleanup_error = lifecycle.cleanup(exit_code)
            if cleanup_error is not None:
                warn(f"{cleanup_error} (the run goes on)")
            for text in warnings:  # each once: to the reporter, and stored as a runner's note
                warn(f"run {self.run_id}: {text}")
            end = recorder.end(
                exit_code,
                cancel_reason=self._cancel_reason,
                stderr_tail=stderr_tail,
                start_error=start_error,
                timed_out=lifecycle.time_limit_reason,
                stalled=self._stall_reason,
                notes=warnings,
                note_error=RUNNER_NOTE,
                abandon=lambda: self._kill_now,
            )
            counts, writer = end.counts, recorder.writer
            try:
                agents = self.store.agents(self.run_id)
            except Exception:  # noqa: BLE001 - sqlite3.Error: the summary goes without them
                agents = []
            self.display.finish(self._snapshot(recorder, end.status))
            return RunResult(
                run_id=self.run_id,
                worker=self.handle.name,
                status=end.status,
                exit_code=exit_code,
                run_dir=prepared.run_dir,
                store_path=self.store_path,
                counts=counts,
                error=end.error,
                duration_seconds=round(time.monotonic() - started, 3),
                synthesised=end.synthesised,
                store_error=None if writer.error is None else str(writer.error),
                lost_rows=writer.lost_rows,
                degraded_rows=writer.degraded_rows,
                transactions=writer.transactions,
                env_steps=max(recorder.ingest.env_steps, counts.get("env_steps") or 0),
                warnings=warnings,
                observers=end.observers,
                agents=agents,
            )
        except BaseException as exc:  # the runner itself failed: record it, leave no orphan
            if proc is not None and proc.poll() is None:
                proc.kill_group()
                proc.wait()
            try:
                self.store.finish_run(
                    self.run_id,
                    "failed",
                    None if proc is None else proc.poll(),
                    f"mosaic run itself failed: {type(exc).__name__}: {exc}",
                )
            except Exception:  # noqa: BLE001 - the original error matters more
                pass
            raise
        finally:
            control.close()  # the socket is removed and the terminal restored, whatever happened
            restore()
            lifecycle.close()
            recorder.close(timeout=5)
            self.store.close()

    def _snapshot(self, recorder: RunRecorder, status: str = "running") -> Snapshot:
        ingest, now = recorder.ingest, time.monotonic()
        return Snapshot(
            run_id=self.run_id,
            worker=self.handle.name,
            elapsed=now - self._started,
            steps=ingest.env_steps,
            step_lines=ingest.steps,
            episodes=ingest.episodes,
            events=ingest.events,
            log_lines=ingest.log_lines,
            recent_returns=ingest.recent_returns,
            games=ingest.games,
            agent_returns=dict(ingest.agent_returns),
            last_event=ingest.last_event,
            status=status,
            control_note=self._control.note if self._control else None,
            control_keys=self._control.keys_help if self._control else None,
            health=recorder.health.describe(now) if status == "running" else None,
        )


def run_worker(
    worker: str | WorkerHandle,
    config: Mapping[str, Any] | ResolvedJob | None = None,
    **options: Any,
) -> RunResult:
    """Run ``worker`` (a name or a handle) with ``config`` to the end; returns a RunResult.

    Raises, before anything starts, :class:`~mosaic_sdk.plugins.PluginError`, ``ConfigError``
    or :class:`~mosaic_sdk.runner.storage.store.StoreError`; a run that starts always returns a
    result. In the main thread SIGINT, SIGTERM and SIGHUP cancel the run. ``options``: the
    keyword arguments of :class:`RunSupervisor`.
    """
    handle = resolve_worker(worker, reporter=options.get("reporter"))
    return RunSupervisor(handle, config, **options).run()


__all__ = [
    "RunResult",
    "RunSupervisor",
    "WorkerProtocolError",
    "resolve_worker",
    "run_worker",
]
