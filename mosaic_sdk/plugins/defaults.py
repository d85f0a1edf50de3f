"""The SDK's own answers to worker hooks, registered in every plugin manager (trylast)."""

from __future__ import annotations

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.hookspecs import PROTOCOL_VERSION, hookimpl


@hookimpl(trylast=True)
def mosaic_worker_protocol_version() -> int:
    """Workers built on this SDK speak its protocol unless they say otherwise."""
    return PROTOCOL_VERSION


@hookimpl(trylast=True)
def mosaic_worker_config_model() -> type[WorkerConfig]:
    """A worker that declares no config model gets the plain ``WorkerConfig``."""
    return WorkerConfig
