"""Loading a plugin in this process without letting it take the process down."""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")

#: Seconds a plugin has to load (import and describe itself) unless MOSAIC_PLUGIN_TIMEOUT says.
DEFAULT_TIMEOUT = 10.0
TIMEOUT_VARIABLE = "MOSAIC_PLUGIN_TIMEOUT"
#: The prefix of the names of the threads that load plugins.
THREAD_PREFIX = "mosaic-plugin-load:"


def plugin_timeout(environ: Mapping[str, str] | None = None) -> float:
    """The plugin time bound in seconds: ``MOSAIC_PLUGIN_TIMEOUT`` from ``environ``, else
    from the process environment, else :data:`DEFAULT_TIMEOUT`. A value that is not a number
    > 0 is said once on stderr and the default is used (discovery never stops for it)."""
    raw = (environ or {}).get(TIMEOUT_VARIABLE) or os.environ.get(TIMEOUT_VARIABLE, "")
    if not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        _warn_once(
            f"mosaic: {TIMEOUT_VARIABLE}={raw[:40]!r} is not a number of seconds > 0; using "
            f"{DEFAULT_TIMEOUT:g}"
        )
        return DEFAULT_TIMEOUT
    return value


_warned: set[str] = set()


def _warn_once(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        print(text, file=sys.stderr)


def timeout_message(timeout: float) -> str:
    """What a plugin that did not load within ``timeout`` seconds is told."""
    return (
        f"it did not finish loading within {timeout:g} s (its import or factory never "
        f"returned); it is skipped. Fix it, or give it longer with {TIMEOUT_VARIABLE}=SECONDS"
    )


class PluginTimeout(Exception):
    """A plugin's import or factory did not return within the time bound."""


@dataclass
class Outcome(Generic[T]):
    """What one guarded call did: its value, what it raised, or that it did not finish."""

    value: T | None = None
    error: BaseException | None = None
    finished: bool = True


def run_guarded(name: str, call: Callable[[], T], timeout: float) -> Outcome[T]:
    """Run ``call`` on a thread of its own and wait at most ``timeout`` seconds for it (a call
    that does not return is left running, abandoned). Never raises what ``call`` raises."""
    outcome: Outcome[T] = Outcome(finished=False)

    def body() -> None:
        try:
            outcome.value = call()
        except BaseException as exc:  # noqa: BLE001 - a plugin's SystemExit is its error
            outcome.error = exc
        outcome.finished = True

    thread = threading.Thread(target=body, name=THREAD_PREFIX + name, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return Outcome(error=PluginTimeout(timeout_message(timeout)), finished=False)
    return outcome


class _RoutedStdout:
    """``sys.stdout`` while plugins load: the writes of every thread but ``owner`` go to
    ``sys.stderr`` (plugin code printing must not mix into the command's output); the owner's
    go where they went. Every other attribute is the real stream's."""

    def __init__(self, real: IO[str], owner: threading.Thread) -> None:
        self._real = real
        self._owner: threading.Thread | None = owner

    def _target(self) -> IO[str]:
        current = threading.current_thread()
        if current is self._owner:
            return self._real
        if self._owner is None and not current.name.startswith(THREAD_PREFIX):
            return self._real  # after discovery: only the loader threads left behind
        return sys.stderr if sys.stderr is not self else sys.__stderr__ or self._real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def writelines(self, lines: Any) -> None:
        self._target().writelines(lines)

    def flush(self) -> None:
        self._target().flush()

    @property
    def buffer(self) -> Any:
        """The binary stream under the one this thread writes to."""
        return getattr(self._target(), "buffer", None) or getattr(self._real, "buffer", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextmanager
def plugin_output_to_stderr() -> Iterator[None]:
    """While the block runs, what other threads (the plugin loaders, threads a plugin starts)
    write to ``sys.stdout`` goes to ``sys.stderr``. When it ends, ``sys.stdout`` is the real
    stream again, unless a loader thread is still running (a plugin that never returned):
    then the router stays, sending only those threads' writes to stderr."""
    current = sys.stdout
    if isinstance(current, _RoutedStdout) or current is None:
        yield  # nested, or no stdout at all
        return
    router = _RoutedStdout(current, threading.current_thread())
    sys.stdout = router  # type: ignore[assignment]
    try:
        yield
    finally:
        left = [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
        if sys.stdout is router:
            if left:
                router._owner = None
            else:
                sys.stdout = current
