"""A control ``Session`` on a worker run by :class:`RunLifecycle` (its stdin a pipe)."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from mosaic_sdk.control.session import DEFAULT_TIMEOUT, Session
from mosaic_sdk.exit_status import describe_exit
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.supervision.launch import PreparedRun
from mosaic_sdk.runner.supervision.lifecycle import (
    END_OF_OUTPUT_WAIT,
    READ_WAIT,
    RunLifecycle,
    RunObserver,
)
from mosaic_sdk.runner.supervision.stdin import StdinClosed

#: Seconds a command line may wait for room in the worker's stdin pipe.
WRITE_TIMEOUT = 5.0
#: Seconds to wait, after the worker exited, for the end of the run (output, reaping, cleanup).
FINISH_WAIT = END_OF_OUTPUT_WAIT + 10.0


class _Feed(RunObserver):
    """Hands the lifecycle's stdout lines to the session; takes the link's last looks."""

    def __init__(self, link: LifecycleLink, session: Session) -> None:
        self.link = link
        self.session = session

    def on_lines(self, lines: list[bytes], arrived: float, eof: bool, partial: bool) -> None:
        if lines:
            self.session.feed(lines)
        if eof:
            self.session.end_of_output()

    def on_pass(self, now: float, eof: bool) -> None:
        link = self.link
        if link.look_asked.is_set():
            link.look_asked.clear()
            proc = link.lifecycle.proc
            if proc is not None and proc.poll() is None:
                proc.descendants.walk(force=True)
            link.looked.set()


class LifecycleLink:
    """A :class:`~mosaic_sdk.control.link.WorkerLink` over a :class:`RunLifecycle`, whose one
    thread starts the worker (its parent-death signal is tied to that thread), feeds its stdout
    to the session and ends the run. What went wrong on the way is in :attr:`problems`."""

    def __init__(
        self,
        handle: WorkerHandle,
        prepared: PreparedRun,
        *,
        stderr_path: Path | None = None,
        on_stderr_lines: Callable[[list[bytes], bool], None] | None = None,
        grace: float = 10.0,
    ) -> None:
        self.lifecycle = RunLifecycle(
            handle,
            prepared,
            stderr_path=stderr_path,
            on_stderr_lines=on_stderr_lines,
            grace=grace,
            stdin_pipe=True,
        )
        self.stderr_path = stderr_path
        self.problems: list[str] = []
        #: The exit code once the run has ended (None before, or if it never started).
        self.exit_code: int | None = None
        self.look_asked = threading.Event()
        self.looked = threading.Event()
        self._look_lock = threading.Lock()
        self._started = threading.Event()
        self._done = threading.Event()
        self._start_error: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, session: Session) -> None:
        """Start the worker and feed ``session``; ``RuntimeError`` when it cannot start."""
        if self._thread is not None:
            raise RuntimeError("this link has already started its worker")
        self.lifecycle.observer = _Feed(self, session)
        self._thread = threading.Thread(
            target=self._run, args=(session,), name="mosaic-session-lifecycle", daemon=True
        )
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            raise RuntimeError(self._start_error)

    def _run(self, session: Session) -> None:
        lifecycle = self.lifecycle
        try:
            lifecycle.start()
        except RuntimeError as exc:
            self._start_error = str(exc)
            self._note(lifecycle.cleanup(None))
            session.end_of_output()
            self._done.set()
            self._started.set()
            return
        self._started.set()
        try:
            lifecycle.supervise()
        except Exception as exc:  # noqa: BLE001 - a bug of ours: the tree must still end
            self.problems.append(f"supervising the worker failed: {type(exc).__name__}: {exc}")
        finally:
            session.end_of_output()
            try:
                self.exit_code = lifecycle.finish()
                self._note(lifecycle.cleanup(self.exit_code))
                if lifecycle.proc is not None:
                    self.problems.extend(lifecycle.proc.stderr_problems())
            finally:
                lifecycle.close()
                self._done.set()

    def _note(self, problem: str | None) -> None:
        if problem is not None:
            self.problems.append(problem)

    @property
    def done(self) -> bool:
        """True once the run has ended: tree reaped, cleanup hook called."""
        return self._done.is_set()

    @property
    def pid(self) -> int | None:
        proc = self.lifecycle.proc
        return None if proc is None else proc.pid

    @property
    def returncode(self) -> int | None:
        proc = self.lifecycle.proc
        return None if proc is None else proc.proc.returncode

    def write_line(self, line: bytes) -> None:
        proc = self.lifecycle.proc
        if proc is None:
            raise BrokenPipeError(self._start_error or "the worker has not been started")
        try:
            proc.stdin.write_line(line, timeout=WRITE_TIMEOUT)
        except StdinClosed as exc:
            raise BrokenPipeError(str(exc)) from None

    def close_stdin(self) -> None:
        proc = self.lifecycle.proc
        if proc is not None:
            proc.stdin.close("the session closed the worker's stdin")

    def poll(self) -> int | None:
        proc = self.lifecycle.proc
        return None if proc is None else proc.poll()

    def wait(self, timeout: float) -> int | None:
        proc = self.lifecycle.proc
        if proc is None:
            return None
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._done.wait(FINISH_WAIT)  # the rest of its output, its tree reaped, the cleanup
        return code

    def last_look(self) -> None:
        proc = self.lifecycle.proc
        if proc is None or self.done or proc.poll() is not None:
            return
        with self._look_lock:
            self.looked.clear()
            self.look_asked.set()
            self.looked.wait(READ_WAIT * 10)

    def end(self, wait: float, grace: float) -> int | None:
        self.close_stdin()
        if self.lifecycle.proc is None:
            return None
        code = self.wait(wait)
        if code is None:
            self.lifecycle.grace = grace
            self.lifecycle.request_stop("the control session ended")
            code = self.wait(grace + 2.0)  # the lifecycle SIGKILLs the tree after the grace
        if code is None:
            code = self.kill()
        return self.exit_code if self.done else code

    def kill(self) -> int | None:
        self.close_stdin()
        proc = self.lifecycle.proc
        if proc is None:
            return None
        if not self.done:
            self.lifecycle.kill()  # at the supervising thread's next pass
            self._done.wait(FINISH_WAIT)
        if not self.done:  # that thread is stuck: end the tree from here
            proc.kill_group()
            self.problems.append("the supervising thread did not end; the tree was killed")
        return self.exit_code if self.done else proc.poll()

    def note(self) -> str:
        proc = self.lifecycle.proc
        if proc is None:
            return f" (the worker did not start: {self._start_error})" if self._start_error else ""
        code = proc.poll()
        if code is None:
            return " (the worker is still running)"
        tail = [line for line in list(proc.stderr_tail) if line.strip()][-3:]
        said = f"; its stderr ends: {' | '.join(tail)}" if tail else ""
        where = f"; all of it is in {self.stderr_path}" if self.stderr_path and tail else ""
        return f" (the worker {describe_exit(code)}{said}{where})"


def launch_session(
    handle: WorkerHandle,
    prepared: PreparedRun,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    stderr_path: Path | None = None,
    on_stderr_lines: Callable[[list[bytes], bool], None] | None = None,
) -> Session:
    """Start ``prepared`` under :class:`RunLifecycle` and return a :class:`Session` on it
    (``timeout``: seconds per reply); ``RuntimeError`` when the worker cannot start."""
    link = LifecycleLink(handle, prepared, stderr_path=stderr_path, on_stderr_lines=on_stderr_lines)
    session = Session(link=link, timeout=timeout, run_id=prepared.run_id, run_dir=prepared.run_dir)
    link.start(session)
    return session
