"""Entry points as discovery and the ``mosaic.plugins`` group both read them: the candidates,
the installed ones of a group, the error that says why one did not load, and how one is loaded
under the plugin time bound and the probe's verdicts (:mod:`.guard`, :mod:`.probe`)."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from typing import TypeVar, cast

import pluggy
from pydantic import ValidationError

from mosaic_sdk.hookspecs import PROJECT_NAME
from mosaic_sdk.plugins.errors import WorkerLoadError
from mosaic_sdk.plugins.guard import PluginTimeout, run_guarded
from mosaic_sdk.plugins.probe import ProbeFailure, ProbeItem, forget, probe

T = TypeVar("T")


@dataclass
class EntryPointCandidate:
    name: str
    value: str
    distribution: str | None
    dist_version: str | None
    load: Callable[[], object]  # returns the named object
    #: Whether a child process can load it from ``value`` (an installed entry point or a
    #: ``MOSAIC_PLUGINS`` entry; not an object given in-process): see :mod:`.probe`.
    probe: bool = False
    #: The distribution's metadata directory, when known.
    location: str | None = None

    def source(self) -> str:
        return f"{self.distribution or '?'} ({self.value})"

    def probe_item(self, group: str) -> ProbeItem:
        return ProbeItem(
            group, self.name, self.value, self.distribution, self.dist_version, self.location
        )


def has_hookimpls(obj: object) -> bool:
    """Whether ``obj`` has attributes marked with ``@mosaic_sdk.hookimpl``."""
    attr = f"{PROJECT_NAME}_impl"
    return any(hasattr(getattr(obj, n, None), attr) for n in dir(obj) if n.startswith("mosaic_"))


def csv_names(value: str | None) -> list[str]:
    """The non-empty, stripped items of a comma-separated setting (``MOSAIC_PLUGINS`` ...)."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def installed_entry_points(group: str) -> list[EntryPointCandidate]:
    """The installed entry points of ``group``, each once (a distribution seen twice on
    sys.path is listed once)."""
    found: list[EntryPointCandidate] = []
    seen: set[tuple[str, str, str | None]] = set()
    for ep in importlib_metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        key = (ep.name, ep.value, dist_name)
        if key in seen:
            continue
        seen.add(key)
        version = dist.version if dist is not None else None
        location = getattr(dist, "_path", None)  # PathDistribution's directory, when it is one
        location = None if location is None else str(location)
        found.append(
            EntryPointCandidate(
                ep.name, ep.value, dist_name, version, ep.load, probe=True, location=location
            )
        )
    return found


def load_error(c: EntryPointCandidate, exc: BaseException) -> WorkerLoadError:
    """The :class:`WorkerLoadError` that says why ``c`` could not be loaded: a validation
    error's fields on one line, what a ``SystemExit`` (argparse, ``sys.exit()``) or another
    exception that is not an ``Exception`` means, else the exception's text, with its
    traceback."""
    if isinstance(exc, ValidationError):
        message = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
    elif isinstance(exc, SystemExit):
        message = (
            f"it called sys.exit({exc.code!r}) while loading (argparse does so when a factory "
            "parses sys.argv); it is skipped"
        )
    elif not isinstance(exc, Exception):
        message = (
            f"it raised {type(exc).__name__}({str(exc)!r}) while loading, which stops a "
            "program unless caught; it is skipped"
        )
    else:
        message = str(exc) or exc.__class__.__name__
    return WorkerLoadError(
        name=c.name,
        distribution=c.distribution,
        error_type=type(exc).__name__,
        message=message,
        traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    )


class Attempt:
    """One guarded load: registrations it made, undone if the load is abandoned (timed out)
    so that a plugin that returns later cannot register itself behind discovery's back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._registered: list[tuple[pluggy.PluginManager, str]] = []

    def register(self, pm: pluggy.PluginManager, plugin: object, name: str) -> None:
        with self._lock:
            if self._abandoned:
                raise PluginTimeout("it returned after its time was up")
            pm.register(plugin, name=name)
            self._registered.append((pm, name))

    def unregister(self) -> None:
        with self._lock:
            for pm, name in self._registered:
                if pm.get_plugin(name) is not None:
                    pm.unregister(name=name)
            self._registered.clear()

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
        self.unregister()


#: The probe's verdicts on a plugin that would take the process down (ended it, never returned).
FATAL = frozenset({"PluginEndedProcess", "PluginTimeout"})


class LoadPolicy:
    """How the entry points of one discovery are loaded: the plugin time bound, and the
    probe's verdicts (:mod:`mosaic_sdk.plugins.probe`) by entry point."""

    def __init__(self, timeout: float, *, fatal_only: bool = False) -> None:
        self.timeout = timeout
        #: Trust only the probe's verdicts that the process could not survive (a load without
        #: discovery's checks: what the child found wrong may not be wrong for it).
        self.fatal_only = fatal_only
        self.verdicts: dict[ProbeItem, ProbeFailure | None] = {}

    def probe(self, group: str, candidates: list[EntryPointCandidate]) -> None:
        """Probe every probe-able candidate of ``group`` (one child for all that need it)."""
        self.probe_items([c.probe_item(group) for c in candidates if c.probe])

    def probe_items(self, items: list[ProbeItem]) -> None:
        items = [item for item in dict.fromkeys(items) if item not in self.verdicts]
        if not items:
            return
        for index, verdict in probe(items, self.timeout).items():
            self.verdicts[items[index]] = verdict

    def load(
        self,
        group: str,
        c: EntryPointCandidate,
        work: Callable[[Attempt], T | WorkerLoadError],
    ) -> T | WorkerLoadError:
        """``work(attempt)`` for ``c`` on a loader thread, within the time bound; the probe's
        error instead when it found one."""
        item = c.probe_item(group) if c.probe else None
        verdict = self.verdicts.get(item) if item is not None else None
        if verdict is not None and not (self.fatal_only and verdict.error_type not in FATAL):
            return WorkerLoadError(
                c.name, c.distribution, verdict.error_type, verdict.message, verdict.traceback
            )
        attempt = Attempt()
        outcome = run_guarded(c.name, lambda: work(attempt), self.timeout)
        if not outcome.finished:
            attempt.abandon()
        error = outcome.error
        result = cast(T, outcome.value) if error is None else load_error(c, error)
        if isinstance(result, WorkerLoadError) and item is not None and item in self.verdicts:
            forget([item])  # it passed a probe once: probe it again next time
        return result
