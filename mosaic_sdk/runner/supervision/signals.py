"""The stop signals a driver of runs (``mosaic run``, ``mosaic sweep``) takes over while it runs."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType


def install_stop_handlers(
    handler: Callable[[int, FrameType | None], None],
) -> Callable[[], None]:
    """Route SIGINT, SIGTERM and SIGHUP to ``handler``; returns the function that puts the
    previous handlers back. Outside the main thread (where Python refuses handlers) it
    changes nothing. SIGHUP too: when the terminal closes, a worker in a session of its own
    would otherwise train on, orphaned, with nobody reading its output."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, handler) for s in wanted}

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old)

    return restore
