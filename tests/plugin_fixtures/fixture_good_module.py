"""A worker plugin as a module (the entry-point form published SDK workers use): its hooks are
module-level functions. Worker type ``good``."""

from __future__ import annotations

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import WorkerCapabilities, WorkerMetadata


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    return WorkerMetadata(name="Good Module", version="1.0", license="MIT"), WorkerCapabilities(
        worker_type="good"
    )
