"""Keep the last lines written to this process's stderr (fd 2), while passing them through.

:class:`StderrTail` points fd 2 at a pipe; a thread copies everything to the original stderr
(so the runner still stores it) and keeps the last ``lines`` lines, which ``run_failed``
reports. Python's ``sys.stderr``, warnings and C extensions all write to fd 2, so all of it
is seen.
"""

from __future__ import annotations

import collections
import os
import sys
import threading


class StderrTail:
    """Tee fd 2 through a pipe and remember its tail (a context manager)."""

    def __init__(self, lines: int = 40) -> None:
        self._tail: collections.deque[str] = collections.deque(maxlen=lines)
        self._saved: int | None = None
        self._thread: threading.Thread | None = None
        self._read_fd: int | None = None

    def start(self) -> StderrTail:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        read_fd, write_fd = os.pipe()
        self._saved = os.dup(2)
        os.set_inheritable(self._saved, False)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        self._read_fd = read_fd
        self._thread = threading.Thread(target=self._pump, name="stderr-tail", daemon=True)
        self._thread.start()
        return self

    def _pump(self) -> None:
        assert self._read_fd is not None and self._saved is not None
        pending = b""
        while True:
            chunk = os.read(self._read_fd, 65536)
            if not chunk:
                break
            try:
                os.write(self._saved, chunk)
            except OSError:
                pass
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                self._tail.append(raw.decode("utf-8", "replace"))
        if pending:
            self._tail.append(pending.decode("utf-8", "replace"))
        os.close(self._read_fd)

    def text(self) -> str:
        """The kept lines, oldest first."""
        return "\n".join(self._tail)

    def stop(self) -> None:
        """Give fd 2 back to the original stderr and wait for the copy to finish."""
        if self._saved is None:
            return
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self._saved, 2)  # closes the pipe's last write end: the pump sees EOF
        if self._thread is not None:
            self._thread.join(timeout=5)
        os.close(self._saved)
        self._saved = None

    def __enter__(self) -> StderrTail:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["StderrTail"]
