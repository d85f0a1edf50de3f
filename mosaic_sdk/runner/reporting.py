"""How the runner tells people something: one :class:`Reporter`, never a print.

The runner and the tools on it (sweeps, the store writer, observers, the control socket) meet
things a person should hear about while a run goes on: a plugin that failed to load, a hook
that raised, a store that stays locked, a control socket that cannot be made. Each is a
warning, one sentence, handed to :meth:`Reporter.warn`; the runner itself never writes to
stdout or stderr (only ``cli/`` talks to people, see ARCHITECTURE.md).

Which reporter hears it: the one passed to :func:`~mosaic_sdk.runner.run_worker` (or
``RunSupervisor``, ``resolve_worker``, ``start_session``), else the process's
(:func:`current_reporter`). ``mosaic`` (``mosaic_sdk.cli.main``) installs one that prints each
warning as ``mosaic: warning: ...`` on stderr (:func:`use_reporter`). A program that uses the
runner as a library gets the default, which prints nothing: it keeps the latest warnings
(``warnings``) and hands each to the ``mosaic_sdk.runner`` :mod:`logging` logger at level
WARNING, shown only if the program configures logging.
"""

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


def reporter_or_current(reporter: Reporter | None) -> Reporter:
    """``reporter``, or the process's reporter when it is None."""
    return reporter if reporter is not None else _current


__all__ = ["KEEP", "Reporter", "current_reporter", "logger", "reporter_or_current", "use_reporter"]
