"""How a process ended, in words: the one place an exit code becomes text.

A negative exit code (``subprocess``'s ``returncode``, ``multiprocessing``'s ``exitcode``) means
the process was killed by that signal; it is named, with the number, everywhere a worker's end
is reported (``mosaic run``, the conformance checks, ``mosaic submit``, ``mosaic play``...):
``killed by signal SIGSEGV (-11)``, not a bare ``-11``.
"""

from __future__ import annotations

import signal


def signal_name(signum: int) -> str:
    """``"SIGSEGV"`` for 11; ``"signal 99"`` for a number no signal of this platform has."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _killed(code: int) -> str:
    name = signal_name(-code)
    return f"killed by {'' if name.startswith('signal ') else 'signal '}{name} ({code})"


def exit_status(code: int | None) -> str:
    """A noun phrase: ``"exit code 3"``, ``"killed by signal SIGSEGV (-11)"``, or
    ``"no exit code"`` (None: the process has not ended, or never started)."""
    if code is None:
        return "no exit code"
    return _killed(code) if code < 0 else f"exit code {code}"


def describe_exit(code: int | None, *, unknown: str = "did not start") -> str:
    """A verb phrase for "the worker ...": ``"exited with code 3"``, ``"was killed by signal
    SIGSEGV (-11)"``, or ``unknown`` for None."""
    if code is None:
        return unknown
    return f"was {_killed(code)}" if code < 0 else f"exited with code {code}"
