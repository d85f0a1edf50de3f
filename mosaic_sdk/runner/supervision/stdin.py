"""The worker's stdin, when the runner keeps it as a pipe (a worker of the control protocol)."""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from typing import IO


class StdinClosed(Exception):
    """A line could not be written to the worker's stdin; the message says why."""


class WorkerStdin:
    """Writes whole lines to one worker's stdin: serialized (two commands never interleave) and
    non-blocking (a worker that stops reading cannot hang the runner); every failure is a
    :class:`StdinClosed` that says what happened."""

    def __init__(self, stream: IO[bytes] | None, pid: int) -> None:
        self._stream = stream
        self.pid = pid
        self._lock = threading.Lock()
        self._why_closed: str | None = None
        if stream is None:
            self._why_closed = (
                "the worker's stdin is not a pipe (it does not claim the control protocol)"
            )
        else:
            os.set_blocking(stream.fileno(), False)

    def write_line(self, line: bytes, timeout: float = 2.0) -> None:
        """Write ``line`` (a newline is added when missing) as one unit; ``StdinClosed`` when
        it cannot be written within ``timeout`` seconds."""
        if not line.endswith(b"\n"):
            line += b"\n"
        with self._lock:
            if self._why_closed is not None or self._stream is None:
                raise StdinClosed(self._why_closed or "no stdin")
            fd = self._stream.fileno()
            view = memoryview(line)
            deadline = time.monotonic() + timeout
            while view:
                try:
                    view = view[os.write(fd, view) :]
                    continue
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ValueError, OSError) as exc:
                    self._why_closed = (
                        f"the worker (pid {self.pid}) closed its stdin or exited "
                        f"({type(exc).__name__}); it takes no more commands"
                    )
                    raise StdinClosed(self._why_closed) from None
                left = deadline - time.monotonic()
                if left <= 0 or not _writable(fd, left):
                    reason = (
                        f"the worker (pid {self.pid}) is not reading its stdin (the pipe stayed "
                        f"full for {timeout:g} s)"
                    )
                    if len(view) < len(line):  # half a line went out: the stream is unusable
                        self._why_closed = reason + "; a command was cut, no more are sent"
                    raise StdinClosed(reason)

    def close(self, why: str = "the run is ending; the worker's stdin is closed") -> None:
        """Close the pipe (the worker reads EOF); later writes raise ``StdinClosed(why)``."""
        with self._lock:
            if self._why_closed is None:
                self._why_closed = why
            if self._stream is not None:
                with contextlib.suppress(OSError):
                    self._stream.close()


def _writable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return bool(poller.poll(max(1, int(timeout * 1000))))
