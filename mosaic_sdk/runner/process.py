"""Supervising one worker process: stdout lines as they arrive, stderr kept, clean stops.

:class:`WorkerProcess` starts the child in a session of its own (so a Ctrl-C typed in the
terminal reaches the runner, which decides what to forward) with stdout and stderr piped.

- :meth:`WorkerProcess.lines` yields every stdout line as ``(bytes, arrival_monotonic)``,
  reading in large chunks (fast) and yielding a final line without its newline too (a worker
  killed mid-line loses nothing that reached the pipe). It ends at EOF.
- stderr is drained by a thread into ``stderr_path`` (when given) and the last lines are
  kept in :attr:`WorkerProcess.stderr_tail`.
- :meth:`WorkerProcess.stop` sends SIGTERM to the worker, waits ``grace`` seconds, then
  SIGKILLs its whole process group; :meth:`WorkerProcess.reap_group` removes any process the
  worker left behind in its group once it has exited (no orphans).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
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
            if pending:
                self.stderr_tail.append(pending.decode("utf-8", "replace"))
        finally:
            if sink is not None:
                sink.close()

    def lines(self) -> Iterator[tuple[bytes, float]]:
        """Every stdout line (without its newline) with its arrival time, until EOF."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        pending = b""
        while True:
            chunk = os.read(fd, _CHUNK)
            now = time.monotonic()
            if not chunk:
                break
            if self.first_line_at is None:
                self.first_line_at = now
            pending += chunk
            if b"\n" not in chunk:
                continue
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                yield raw, now
        if pending:
            yield pending, time.monotonic()

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
