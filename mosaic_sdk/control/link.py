"""What a :class:`~mosaic_sdk.control.session.Session` needs of its worker: :class:`WorkerLink`."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from typing import IO, Protocol

from mosaic_sdk.exit_status import describe_exit


class WorkerLink(Protocol):
    """The worker's stdin and lifetime, as a session sees them."""

    @property
    def pid(self) -> int | None:
        """The worker's pid (None when unknown)."""

    @property
    def returncode(self) -> int | None:
        """The worker's exit code once it has exited (None before)."""

    def write_line(self, line: bytes) -> None:
        """Write one whole line (ending in a newline) to the worker's stdin, else ``OSError``."""

    def close_stdin(self) -> None:
        """Close the worker's stdin (it reads EOF); never raises."""

    def poll(self) -> int | None:
        """The exit code, or None while the worker runs."""

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the worker to exit; its exit code, or None."""

    def last_look(self) -> None:
        """Note what runs below the worker now: it is about to be told to end."""

    def end(self, wait: float, grace: float) -> int | None:
        """End the worker: close its stdin, give it ``wait`` seconds to exit on its own, then
        the stop signal and, ``grace`` seconds later, SIGKILL. Returns the exit code."""

    def kill(self) -> int | None:
        """End the worker now (SIGKILL); returns the exit code."""

    def note(self) -> str:
        """A few words on the worker's state for an error message (``""`` when unknown)."""


class PipeLink:
    """A link over a binary stream to the worker's stdin and, optionally, its ``Popen``."""

    def __init__(self, stdin: IO[bytes], process: subprocess.Popen[bytes] | None = None) -> None:
        self._stdin = stdin
        self.process = process
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    def write_line(self, line: bytes) -> None:
        try:
            with self._lock:
                self._stdin.write(line)
                self._stdin.flush()
        except ValueError as exc:  # a closed file
            raise BrokenPipeError(str(exc)) from None

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError, ValueError), self._lock:
            self._stdin.close()

    def poll(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def wait(self, timeout: float) -> int | None:
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def last_look(self) -> None:
        """Nothing to note: a plain ``Popen`` does not follow the worker's children."""

    def end(self, wait: float, grace: float) -> int | None:
        self.close_stdin()
        if self.process is None:
            return None
        code = self.wait(wait)
        if code is None:
            self.process.terminate()
            code = self.wait(grace)
        if code is None:
            code = self.kill()
        return code

    def kill(self) -> int | None:
        self.close_stdin()
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()

    def note(self) -> str:
        if self.process is None:
            return ""
        code = self.process.poll()
        if code is None:
            return " (the worker is still running)"
        return f" (the worker {describe_exit(code)})"
