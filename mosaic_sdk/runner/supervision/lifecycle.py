"""One run's lifecycle: start, read to the end of output, stop, reap, cleanup hook; the only code
that supervises a worker process (``mosaic run``, Ray trials, conformance, control sessions)."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.supervision.launch import PreparedRun
from mosaic_sdk.runner.supervision.lines import DEFAULT_MAX_LINE
from mosaic_sdk.runner.supervision.process import WorkerProcess

#: Seconds to wait for EOF on stdout after the worker exited and its group was reaped (a
#: process outside the group may still hold the pipe open).
END_OF_OUTPUT_WAIT = 5.0
#: While output flows, call :meth:`RunObserver.on_check` this often (s).
CHECK_INTERVAL = 0.05
#: Longest wait for output in one pass of the read loop (s).
READ_WAIT = 0.1


class RunObserver:
    """What a user of :class:`RunLifecycle` sees of a run; every method does nothing here."""

    def max_wait(self, now: float) -> float:
        """Wait at most this long for output before the next pass (s)."""
        return READ_WAIT

    def on_lines(self, lines: list[bytes], arrived: float, eof: bool, partial: bool) -> None:
        """Stdout lines read at ``arrived`` (monotonic); ``partial``: the last has no newline."""

    def on_pass(self, now: float, eof: bool) -> None:
        """Called after every read (lines or none)."""

    def on_check(self, now: float) -> None:
        """Called at most every :data:`CHECK_INTERVAL` while the run lasts."""

    def on_exit_before_eof(self) -> None:
        """The worker exited but its stdout is still open (called before the group is reaped)."""

    def on_output_held_open(self) -> None:
        """No EOF came :data:`END_OF_OUTPUT_WAIT` s after the worker's exit; reading stops."""


class RunLifecycle:
    """Supervise one prepared run: :meth:`start`, :meth:`supervise`, :meth:`finish` and
    :meth:`cleanup`, in that order."""

    def __init__(
        self,
        handle: WorkerHandle,
        prepared: PreparedRun,
        observer: RunObserver | None = None,
        *,
        argv: list[str] | None = None,
        stderr_path: Path | None = None,
        on_stderr_lines: Callable[[list[bytes], bool], None] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE,
        tail_lines: int = 40,
        grace: float = 10.0,
        timeout: float | None = None,
        time_limit: float | None = None,
        stop_after_eof: float | None = None,
        stdin_pipe: bool = False,
    ) -> None:
        self.handle = handle
        self.prepared = prepared
        self.observer = observer or RunObserver()
        self.argv = list(argv) if argv is not None else prepared.argv
        self.stderr_path = stderr_path
        self.on_stderr_lines = on_stderr_lines
        self.max_line_bytes = max_line_bytes
        self.tail_lines = tail_lines
        self.grace = grace
        #: Seconds after the start: ``timeout`` kills the group, ``time_limit`` stops the worker
        #: the usual way (SIGTERM, SIGKILL after ``grace``); None: never.
        self.timeout = timeout
        self.time_limit = time_limit
        self.time_limit_hit = False
        #: Stop the worker when it is still running this long after its stdout closed.
        self.stop_after_eof = stop_after_eof
        self.stdin_pipe = stdin_pipe
        self.proc: WorkerProcess | None = None
        self.stop_reason: str | None = None
        self.kill_now = False
        self.term_sent_at: float | None = None
        self.killed_after_grace = False
        self.timed_out = False
        self._lock = threading.Lock()

    def start(self) -> WorkerProcess:
        """Start the worker; ``RuntimeError`` when it cannot be started."""
        self.proc = WorkerProcess(
            self.argv,
            env=self.prepared.env,
            cwd=self.prepared.cwd,
            stderr_path=self.stderr_path,
            tail_lines=self.tail_lines,
            on_stderr_lines=self.on_stderr_lines,
            max_line_bytes=self.max_line_bytes,
            stdin_pipe=self.stdin_pipe,
        )
        return self.proc

    def request_stop(self, reason: str) -> bool:
        """Ask the worker to stop: SIGTERM now (once), SIGKILL of its group after ``grace``.
        True for the call that started the stop (before :meth:`start`: SIGTERM at the first pass).
        """
        with self._lock:
            if self.stop_reason is not None:
                return False
            self.stop_reason = reason
            proc = self.proc
            if proc is not None and proc.poll() is None:
                self.term_sent_at = time.monotonic()
                proc.send_signal(signal.SIGTERM)
        return True

    @property
    def time_limit_reason(self) -> str | None:
        """``"timed out after S s"`` once the worker was stopped for its ``time_limit``, else
        None (also when a stop asked before the limit was still under way)."""
        hit = self.time_limit_hit and self.stop_reason == f"timed out after {self.time_limit:g} s"
        return self.stop_reason if hit else None

    def kill(self) -> None:
        """Kill the worker's group at the next pass (a second Ctrl-C)."""
        self.kill_now = True

    def supervise(self) -> None:
        """Read stdout to EOF and the worker to its exit, telling the observer. A worker that
        exits with its stdout held open: its group is reaped and EOF awaited
        :data:`END_OF_OUTPUT_WAIT` more seconds, then reading stops."""
        proc = self.proc
        assert proc is not None, "start() first"
        observer = self.observer
        eof = False
        eof_at: float | None = None
        exited_at: float | None = None
        next_check = 0.0
        while True:
            now = time.monotonic()
            got_lines = False
            if not eof:
                lines, eof = proc.read_lines(max(0.0, min(READ_WAIT, observer.max_wait(now))))
                got_lines = bool(lines)
                if lines or eof:
                    arrived = proc.last_read_at if proc.last_read_at is not None else now
                    observer.on_lines(lines, arrived, eof, eof and proc.stdout_partial)
                if eof:
                    eof_at = time.monotonic()
            elif proc.poll() is None:  # output closed: wait for the exit itself, not a tick
                try:
                    proc.wait(timeout=max(0.0, min(READ_WAIT, observer.max_wait(now))))
                except subprocess.TimeoutExpired:
                    pass
            now = time.monotonic()
            observer.on_pass(now, eof)
            if got_lines and not eof and now < next_check:
                continue  # busy: the worker's state and the observer every CHECK_INTERVAL
            next_check = now + CHECK_INTERVAL
            proc.watch_descendants()
            observer.on_check(now)
            if proc.poll() is None:
                self._enforce(now, eof_at)
                continue
            if not eof:  # what the worker wrote before exiting, and EOF unless held open
                eof = self._drain()
            if eof:
                return
            if exited_at is None:  # exited, but something still holds stdout open
                exited_at = now
                observer.on_exit_before_eof()
                proc.reap_group(grace=0.5)
            elif now - exited_at > END_OF_OUTPUT_WAIT:
                observer.on_output_held_open()
                return

    def _drain(self) -> bool:
        """Read what the pipe holds now, without waiting; True at EOF."""
        proc = self.proc
        assert proc is not None
        while True:
            lines, eof = proc.read_lines(0)
            if lines or eof:
                arrived = proc.last_read_at if proc.last_read_at is not None else time.monotonic()
                self.observer.on_lines(lines, arrived, eof, eof and proc.stdout_partial)
                self.observer.on_pass(time.monotonic(), eof)
            if eof or not lines:
                return eof

    def _enforce(self, now: float, eof_at: float | None) -> None:
        """Stops, kills and limits, while the worker runs."""
        proc = self.proc
        assert proc is not None
        age = now - proc.started_at
        if self.timeout is not None and not self.timed_out and age >= self.timeout:
            self.timed_out = True
            proc.kill_group(signal.SIGKILL)
            return
        if self.time_limit is not None and not self.time_limit_hit and age >= self.time_limit:
            self.time_limit_hit = True
            self.request_stop(f"timed out after {self.time_limit:g} s")
        after_eof = self.stop_after_eof
        if after_eof is not None and eof_at is not None and now - eof_at >= after_eof:
            self.request_stop("the worker closed its stdout but did not exit")
        with self._lock:
            if self.stop_reason is not None and self.term_sent_at is None:
                self.term_sent_at = now
                proc.send_signal(signal.SIGTERM)
            term_sent_at = self.term_sent_at
        if self.kill_now:
            proc.kill_group(signal.SIGKILL)
        elif term_sent_at is not None and now - term_sent_at >= self.grace:
            self.killed_after_grace = True
            proc.kill_group(signal.SIGKILL)

    def finish(self) -> int | None:
        """Kill the worker if it still runs, reap what it left, wait for stderr; its exit code."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill_group(signal.SIGKILL)
        code = proc.wait()
        proc.reap_group()
        proc.join_stderr(timeout=END_OF_OUTPUT_WAIT)
        return code

    def cleanup(self, exit_code: int | None) -> str | None:
        """Call ``mosaic_run_cleanup`` once; a sentence when it raised, else None."""
        try:
            self.handle.pm.hook.mosaic_run_cleanup(
                run_id=self.prepared.run_id,
                worker=self.handle.name,
                run_dir=self.prepared.run_dir,
                exit_code=exit_code,
            )
        except Exception as exc:  # noqa: BLE001 - a plugin's bug must not stop the run
            return f"a mosaic_run_cleanup hook raised {type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        if self.proc is not None:
            self.proc.close()
