"""How the runner tells people something: one :class:`Reporter`, never a print (only ``cli/``
writes for people: ARCHITECTURE.md, floor 4)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator

#: The logger every reporter hands its warnings to.
logger = logging.getLogger("mosaic_sdk.runner")
logger.addHandler(logging.NullHandler())  # a library prints nothing unless asked to

#: The most warnings a reporter keeps (the latest ones; a long-lived program runs many runs).
KEEP = 1000


class Reporter:
    """Receives the runner's warnings (thread-safe: the store writer and observers warn from
    their own threads). ``on_warning`` renders each one (the CLI prints it); ``warnings``
    keeps the latest :data:`KEEP`."""

    def __init__(self, on_warning: Callable[[str], None] | None = None) -> None:
        self.on_warning = on_warning
        self.warnings: deque[str] = deque(maxlen=KEEP)
        self._lock = threading.Lock()

    def warn(self, message: str) -> None:
        """One warning: a sentence that says what happened and whether the run goes on."""
        with self._lock:
            self.warnings.append(message)
        logger.warning("%s", message)
        if self.on_warning is not None:
            self.on_warning(message)


_current = Reporter()


def current_reporter() -> Reporter:
    """The process's reporter: the CLI's while ``mosaic`` runs, else the quiet default."""
    return _current


@contextlib.contextmanager
def use_reporter(reporter: Reporter) -> Iterator[Reporter]:
    """Make ``reporter`` the process's reporter inside the ``with`` block."""
    global _current
    previous, _current = _current, reporter
    try:
        yield reporter
    finally:
        _current = previous
