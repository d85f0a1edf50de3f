"""Supervising one worker process: stdout lines as they arrive, stderr kept, clean stops."""

from __future__ import annotations

import collections
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from mosaic_sdk.runner.supervision.lines import DEFAULT_MAX_LINE, LineSplitter
from mosaic_sdk.runner.supervision.proctree import Descendants, parent_death_preexec, pipe_holders
from mosaic_sdk.runner.supervision.stdin import WorkerStdin

_CHUNK = 1 << 16
#: Characters of one stderr line kept in the tail (for error messages; the store has it all).
_TAIL_CHARS = 4096


class WorkerProcess:
    """One running worker in a session of its own (Ctrl-C reaches the runner only); on Linux
    it gets SIGKILL when the runner dies. Read stdout with :meth:`lines` or :meth:`read_lines`.
    A thread drains stderr to EOF into ``stderr_path``, :attr:`stderr_tail` and
    ``on_stderr_lines`` (failures: :meth:`stderr_problems`). stdin is ``/dev/null`` unless
    ``stdin_pipe``."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr_path: Path | None = None,
        tail_lines: int = 40,
        on_stderr_lines: Callable[[list[bytes], bool], None] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE,
        stdin_pipe: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.started_at = time.monotonic()
        # Split before the fork, so a too-small maximum raises here, not in the threads.
        self._stdout_lines = LineSplitter(max_line_bytes)
        self._stderr_lines = LineSplitter(max_line_bytes, cr=True)
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=parent_death_preexec(),  # noqa: PLW1509 - tiny and async-safe
            )
        except OSError as exc:
            raise RuntimeError(f"cannot start the worker ({self.argv[0]}): {exc}") from exc
        self.pid = self.proc.pid  # and its process group's id (a session of its own)
        self.stdin = WorkerStdin(self.proc.stdin, self.pid)
        #: Every process seen below the worker (see :mod:`mosaic_sdk.runner.supervision.proctree`).
        self.descendants = Descendants(self.pid)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self._stderr_path = stderr_path
        self._on_stderr_lines = on_stderr_lines
        #: Bytes of stderr that could not be written to ``stderr_path`` (all after the first
        #: failure: the file keeps an exact prefix of the stream).
        self.stderr_log_lost_bytes = 0
        self.stderr_log_error: str | None = None
        self.stderr_callback_error: str | None = None
        self.stderr_callback_failures = 0
        self._stdout_eof = False
        self._poller: select.poll | None = None
        #: True when the last stdout line ended without a newline (known at EOF).
        self.stdout_partial = False
        #: ``time.monotonic()`` of the latest stdout read that returned data.
        self.last_read_at: float | None = None
        self._stderr_thread = threading.Thread(
            target=self._drain_stderr, name=f"worker-{self.pid}-stderr", daemon=True
        )
        self._stderr_thread.start()
        self.exited_at: float | None = None

    def _drain_stderr(self) -> None:
        """Read stderr to EOF, whatever the log file or the callback do (see the docstring)."""
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        sink = self._open_stderr_log()
        try:
            while True:
                try:
                    chunk = os.read(fd, _CHUNK)
                except OSError:  # the pipe was closed under us (close() at the end)
                    break
                if not chunk:
                    break
                if sink is not None:
                    sink = self._write_stderr_log(sink, chunk)
                else:
                    self.stderr_log_lost_bytes += len(chunk) if self.stderr_log_error else 0
                complete = self._stderr_lines.feed(chunk)
                if complete:
                    self._stderr_out(complete, False)
            last = self._stderr_lines.finish()
            if last is not None:
                self._stderr_out([last], True)
        finally:
            if sink is not None:
                with contextlib.suppress(OSError):
                    os.close(sink)

    def _open_stderr_log(self) -> int | None:
        if self._stderr_path is None:
            return None
        try:
            return os.open(self._stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            self.stderr_log_error = f"cannot open {self._stderr_path}: {exc}"
            return None

    def _write_stderr_log(self, sink: int, chunk: bytes) -> int | None:
        """Write ``chunk`` to the log file; on failure close it and count what is lost."""
        view = memoryview(chunk)
        try:
            while view:
                view = view[os.write(sink, view) :]
            return sink
        except OSError as exc:
            self.stderr_log_error = f"writing {self._stderr_path} failed: {exc}"
            self.stderr_log_lost_bytes += len(view)
            with contextlib.suppress(OSError):
                os.close(sink)
            return None

    def _stderr_out(self, lines: list[bytes], partial: bool) -> None:
        for raw in lines:
            self.stderr_tail.append(raw[:_TAIL_CHARS].decode("utf-8", "replace").rstrip("\r"))
        if self._on_stderr_lines is None:
            return
        try:
            self._on_stderr_lines(lines, partial)
        except Exception as exc:  # noqa: BLE001 - the drain must go on, or the worker blocks
            self.stderr_callback_failures += len(lines)
            if self.stderr_callback_error is None:
                self.stderr_callback_error = f"{type(exc).__name__}: {exc}"

    def stderr_problems(self) -> list[str]:
        """One sentence per thing that went wrong while draining stderr ([] when nothing)."""
        out = []
        if self.stderr_log_error is not None:
            out.append(
                f"the copy of stderr is incomplete ({self.stderr_log_error}; "
                f"{self.stderr_log_lost_bytes} bytes not written; the store has every line)"
            )
        if self.stderr_callback_error is not None:
            out.append(
                f"handling stderr lines failed for {self.stderr_callback_failures} line(s) "
                f"({self.stderr_callback_error}); the stderr file has them"
            )
        return out

    def read_lines(self, timeout: float | None = None) -> tuple[list[bytes], bool]:
        """``(lines, eof)``: the complete stdout lines (without newlines) that arrive within
        ``timeout`` s (None: until some do), reading up to 1 MiB. At EOF the final line comes
        even without its newline (then :attr:`stdout_partial` is True)."""
        assert self.proc.stdout is not None
        if self._stdout_eof:
            return [], True
        fd = self.proc.stdout.fileno()
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        wait_ms = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
        if not self._poller.poll(wait_ms):
            return [], False
        chunks = []
        eof = False
        for _ in range(16):
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                eof = True
                break
            chunks.append(chunk)
            if len(chunk) < _CHUNK or not self._poller.poll(0):
                break
        if chunks:
            self.last_read_at = time.monotonic()
        splitter = self._stdout_lines
        complete: list[bytes] = []
        for chunk in chunks:
            complete += splitter.feed(chunk)
        if eof:
            self._stdout_eof = True
            last = splitter.finish()
            if last is not None:
                complete.append(last)
                self.stdout_partial = True
        return complete, eof

    def lines(self) -> Iterator[tuple[bytes, float]]:
        """Every stdout line (without its newline) with its arrival time, until EOF."""
        while True:
            batch, eof = self.read_lines(None)
            now = self.last_read_at if self.last_read_at is not None else time.monotonic()
            for raw in batch:
                yield raw, now
            if eof:
                return

    def join_stderr(self, timeout: float | None = None) -> bool:
        """Wait until stderr reached EOF and every line was handled; True if it did."""
        self._stderr_thread.join(timeout)
        return not self._stderr_thread.is_alive()

    def stderr_text(self, limit: int | None = None) -> str:
        """The kept tail of stderr (the last ``limit`` lines)."""
        self._stderr_thread.join(timeout=2)
        lines = list(self.stderr_tail)
        return "\n".join(lines if limit is None else lines[-limit:])

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        code = self.proc.wait(timeout)
        if self.exited_at is None:
            self.exited_at = time.monotonic()
        return code

    def send_signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def watch_descendants(self) -> None:
        """Remember the processes now below the worker (cheap: at most every 0.5 s)."""
        if self.proc.poll() is None:
            self.descendants.walk()

    def kill_group(self, signum: int = signal.SIGKILL) -> None:
        """Send ``signum`` to the worker's process group and to every process seen below the
        worker, in the group or not (a setsid() grandchild)."""
        if self.proc.poll() is None:
            self.descendants.walk(force=True)  # a last look while the tree is intact
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)
        self.descendants.signal(signum)

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM the worker, wait up to ``grace`` s, then SIGKILL its group and descendants."""
        self.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill_group(signal.SIGKILL)
            return self.wait()

    def _leftovers(self) -> bool:
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return bool(self.descendants.alive())
        return True

    def reap_group(self, grace: float = 2.0) -> bool:
        """After the worker exited: end what it left in its group, below it, or holding its
        output open (:func:`~mosaic_sdk.runner.supervision.proctree.pipe_holders`); True if any."""
        if not (self._stdout_eof and not self._stderr_thread.is_alive()):
            self.descendants.adopt(pipe_holders(self._output_fds()))
        if not self._leftovers():
            return False
        self.kill_group(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self._leftovers():
            time.sleep(0.02)
        if self._leftovers():
            self.kill_group(signal.SIGKILL)
        return True

    def _output_fds(self) -> list[int]:
        fds = []
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None and not stream.closed:
                    fds.append(stream.fileno())
            except ValueError:
                continue
        return fds

    def close(self) -> None:
        self.stdin.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
