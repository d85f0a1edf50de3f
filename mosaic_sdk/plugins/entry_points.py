"""Entry points as discovery reads them: the candidates, the installed ones of a group, and the
error that says why one did not load."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata as importlib_metadata

from pydantic import ValidationError

from mosaic_sdk.hookspecs import PROJECT_NAME
from mosaic_sdk.plugins.errors import WorkerLoadError


@dataclass
class EntryPointCandidate:
    name: str
    value: str
    distribution: str | None
    dist_version: str | None
    load: Callable[[], object]  # returns the named object

    def source(self) -> str:
        return f"{self.distribution or '?'} ({self.value})"


def has_hookimpls(obj: object) -> bool:
    """Whether ``obj`` has attributes marked with ``@mosaic_sdk.hookimpl``."""
    attr = f"{PROJECT_NAME}_impl"
    for name in dir(obj):
        if name.startswith("mosaic_"):
            member = getattr(obj, name, None)
            if member is not None and hasattr(member, attr):
                return True
    return False


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
        found.append(EntryPointCandidate(ep.name, ep.value, dist_name, version, ep.load))
    return found


def load_error(c: EntryPointCandidate, exc: BaseException) -> WorkerLoadError:
    """The :class:`WorkerLoadError` that says why ``c`` could not be loaded: a validation
    error's fields on one line, else the exception's text, with its traceback."""
    if isinstance(exc, ValidationError):
        message = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
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


__all__ = [
    "EntryPointCandidate",
    "csv_names",
    "has_hookimpls",
    "installed_entry_points",
    "load_error",
]
