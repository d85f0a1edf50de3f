"""Errors of discovery: what a caller catches, and the structured record of a broken worker."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypedDict, cast


class PluginError(Exception):
    """Base of the errors discovery raises for one worker."""


class UnknownWorkerError(PluginError):
    """No worker of that name is installed."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = sorted(known)
        close = difflib.get_close_matches(name, self.known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(self.known) if self.known else "none installed"
        super().__init__(
            f"no worker named {name!r}{hint} (installed: {listing}; see `mosaic workers list`)"
        )
        self.suggestions = close


class WorkerUnavailableError(PluginError):
    """The worker is installed but failed to load or is misdeclared."""

    def __init__(self, error: WorkerLoadError) -> None:
        self.error = error
        super().__init__(error.one_line())


class LoadErrorDict(TypedDict):
    """:meth:`WorkerLoadError.to_dict`: the error of a broken worker or plugin in the
    ``--json`` listings."""

    name: str
    distribution: str | None
    error_type: str
    message: str


@dataclass(frozen=True)
class WorkerLoadError:
    """Why a worker could not be loaded: structured, for ``mosaic workers list --json``."""

    name: str
    distribution: str | None
    error_type: str
    message: str
    traceback: str = ""

    def one_line(self) -> str:
        dist = f" (from {self.distribution})" if self.distribution else ""
        return f"worker {self.name!r}{dist} is unavailable: {self.error_type}: {self.message}"

    def to_dict(self) -> LoadErrorDict:
        fields = ("name", "distribution", "error_type", "message")
        return cast(LoadErrorDict, {key: getattr(self, key) for key in fields})
