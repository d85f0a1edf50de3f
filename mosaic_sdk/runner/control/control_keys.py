"""Keys of the live view of ``mosaic run``: p pause/resume, c checkpoint, s stop."""

from __future__ import annotations

import contextlib
import os
import select
import threading
from typing import Any

from mosaic_sdk.runner.control.control_relay import ControlRelay

#: The footer of the live view.
KEYS_HELP = "p pause/resume · c checkpoint · s stop"
_KEYS = {"p": "pause", "c": "checkpoint", "s": "stop"}


def describe_reply(reply: dict[str, Any]) -> str:
    """One short line for a reply: ``pause: ok`` or ``pause: <code>: <message>``."""
    cmd = reply.get("cmd") or "?"
    if reply.get("ok"):
        return f"{cmd}: ok"
    found = reply.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    return f"{cmd}: {error.get('code', 'error')}: {error.get('message', '')}".rstrip(": ")


class KeyReader:
    """Key presses on ``fd`` (a terminal, in cbreak mode until :meth:`close`) to commands
    through the run's :class:`ControlRelay`, on a thread of its own; the last reply is kept as
    one line in :attr:`note` for the live view."""

    def __init__(self, fd: int, relay: ControlRelay) -> None:
        self.fd = fd
        self.relay = relay
        self.paused = False
        #: The last reply, as one line for the view (None before the first key).
        self.note: str | None = None
        self._stop_r, self._stop_w = os.pipe()
        self._saved: Any = None
        self._thread = threading.Thread(target=self._run, name="control-keys", daemon=True)

    def start(self) -> KeyReader:
        import termios  # POSIX only, and only for a terminal
        import tty

        with contextlib.suppress(termios.error, OSError):
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        self._thread.start()
        return self

    def press(self, key: str) -> dict[str, Any] | None:
        """Act on one key (what the thread does for each key read); its reply, if any."""
        cmd = _KEYS.get(key.lower())
        if cmd is None:
            return None
        if cmd == "pause" and self.paused:
            cmd = "resume"
        self.note = f"{cmd}: sent…"
        reply = self.relay.request({"cmd": cmd})
        if reply.get("ok") and cmd in ("pause", "resume"):
            self.paused = cmd == "pause"
        self.note = describe_reply(reply)
        return reply

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = dict(poller.poll())
            if self._stop_r in ready:
                return
            if self.fd not in ready:
                continue
            try:
                data = os.read(self.fd, 64)
            except OSError:
                return
            if not data:  # the terminal went away
                return
            for key in data.decode("utf-8", "replace"):
                self.press(key)

    def close(self) -> None:
        """Stop reading and give the terminal its old mode back."""
        os.write(self._stop_w, b"x")
        if self._thread.is_alive():
            self._thread.join(timeout=6)
        for fd in (self._stop_r, self._stop_w):
            os.close(fd)
        if self._saved is not None:
            import termios  # POSIX only, and only for a terminal

            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
