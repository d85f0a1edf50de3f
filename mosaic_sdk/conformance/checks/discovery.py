"""Discovery: the entry point loads, names the worker it says, and is the only one of its name."""

from __future__ import annotations

from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject


@conformance_check(
    "discovery.entry_point_loads",
    description="The mosaic.workers entry point imports and names a worker plugin",
    hint="Make the entry point name a module, class or object with @mosaic_sdk.hookimpl "
    "methods (or an upstream factory); import heavy libraries inside hooks, not at import",
    needs_handle=False,
)
def entry_point_loads(subject: WorkerSubject) -> str | None:
    if subject.handle is None:
        raise CheckFailed(f"the entry point {subject.name!r} did not load: {subject.load_error}")
    return f"loaded {subject.handle.entry_point} ({subject.handle.style})"


@conformance_check(
    "discovery.worker_type_matches",
    description="capabilities.worker_type equals the entry-point name",
    hint="Set WorkerCapabilities(worker_type=...) to the name of the entry point in "
    '[project.entry-points."mosaic.workers"]',
    levels=(SDK,),
)
def worker_type_matches(subject: WorkerSubject) -> str | None:
    _, caps = subject.description()
    if caps.worker_type != subject.name:
        raise CheckFailed(
            f"capabilities.worker_type is {caps.worker_type!r} but the entry point is named "
            f"{subject.name!r}; discovery refuses such a worker"
        )
    return None


@conformance_check(
    "discovery.name_unique",
    description="Exactly one installed entry point carries the worker's name",
    hint="Uninstall or rename the other distributions that declare a mosaic.workers entry "
    "point of this name",
    needs_handle=False,
)
def name_unique(subject: WorkerSubject) -> str | None:
    if len(subject.duplicates) > 1:
        raise CheckFailed(
            f"{len(subject.duplicates)} entry points are named {subject.name!r}: "
            + ", ".join(subject.duplicates)
        )
    err = subject.discovery_error
    if err is not None and err.error_type == "DuplicateWorkerName":
        raise CheckFailed(err.message)
    return None
