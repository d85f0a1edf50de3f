"""Supervising one worker process: stdout lines as they arrive, stderr kept, clean stops.

:class:`WorkerProcess` starts the child in a session of its own (so a Ctrl-C typed in the
terminal reaches the runner, which decides what to forward) with stdout and stderr piped.

- :meth:`WorkerProcess.lines` yields every stdout line as ``(bytes, arrival_monotonic)``,
  reading in large chunks (fast) and yielding a final line without its newline too (a worker
  killed mid-line loses nothing that reached the pipe). It ends at EOF.
- :meth:`WorkerProcess.read_lines` is the same reader with a timeout: it returns the complete
  lines that arrived within it, so a caller can do other work (flush a batch, redraw a view,
  handle a signal) while the worker is quiet. :attr:`WorkerProcess.stdout_partial` tells
  whether the last line ended without a newline. Use one of the two readers per process.
- stderr is drained by a thread into ``stderr_path`` (when given) and the last lines are
  kept in :attr:`WorkerProcess.stderr_tail`; ``on_stderr_lines(lines, partial)`` (optional)
  receives every stderr line too, from that thread.
- :meth:`WorkerProcess.stop` sends SIGTERM to the worker, waits ``grace`` seconds, then
  SIGKILLs its whole process group; :meth:`WorkerProcess.reap_group` removes any process the
  worker left behind in its group once it has exited (no orphans).
"""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

_CHUNK = 1 << 16


class WorkerProcess:
    """One running worker (see the module docstring)."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr_path: Path | None = None,
        tail_lines: int = 40,
        on_stderr_lines: Callable[[list[bytes], bool], None] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.started_at = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise RuntimeError(f"cannot start the worker ({self.argv[0]}): {exc}") from exc
        self.pid = self.proc.pid
        self.pgid = self.pid
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self._stderr_path = stderr_path
        self._on_stderr_lines = on_stderr_lines
        self._stdout_pending = b""
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
        self.first_line_at: float | None = None
        self.exited_at: float | None = None

    # -- output --------------------------------------------------------------------------
    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        sink = open(self._stderr_path, "ab") if self._stderr_path else None  # noqa: SIM115
        try:
            pending = b""
            fd = self.proc.stderr.fileno()
            while True:
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    break
                if sink is not None:
                    sink.write(chunk)
                    sink.flush()
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    self.stderr_tail.append(raw.decode("utf-8", "replace"))
                if complete and self._on_stderr_lines is not None:
                    self._on_stderr_lines(complete, False)
            if pending:
                self.stderr_tail.append(pending.decode("utf-8", "replace"))
                if self._on_stderr_lines is not None:
                    self._on_stderr_lines([pending], True)
        finally:
            if sink is not None:
                sink.close()

    def read_lines(self, timeout: float | None = None) -> tuple[list[bytes], bool]:
        """The complete stdout lines (without newlines) that arrive within ``timeout`` s.

        Returns ``(lines, eof)``. Waits at most ``timeout`` seconds for data (``None``: until
        some arrives or EOF), then reads everything the pipe holds (up to 1 MiB). At EOF the
        final line is returned even without its newline (then :attr:`stdout_partial` is True)
        and ``eof`` is True; later calls return ``([], True)``.
        """
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
        now = time.monotonic()
        if chunks:
            self.last_read_at = now
            if self.first_line_at is None:
                self.first_line_at = now
        data = self._stdout_pending + b"".join(chunks)
        *complete, self._stdout_pending = data.split(b"\n")
        if eof:
            self._stdout_eof = True
            if self._stdout_pending:
                complete.append(self._stdout_pending)
                self._stdout_pending = b""
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

    # -- lifetime --------------------------------------------------------------------------
    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        code = self.proc.wait(timeout)
        if self.exited_at is None:
            self.exited_at = time.monotonic()
        return code

    def send_signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def group_alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill_group(self, signum: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM the worker, wait up to ``grace`` s, then SIGKILL its process group."""
        self.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill_group(signal.SIGKILL)
            return self.wait()

    def reap_group(self, grace: float = 2.0) -> bool:
        """After the worker exited: end what it left in its group; True if anything was."""
        if not self.group_alive():
            return False
        self.kill_group(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.group_alive():
            time.sleep(0.02)
        if self.group_alive():
            self.kill_group(signal.SIGKILL)
        return True

    def close(self) -> None:
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


__all__ = ["WorkerProcess"]
