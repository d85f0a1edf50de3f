"""From a worker name to a handle that can be launched: discovery, the warnings for plugins
that failed to load, and the worker protocol check."""

from __future__ import annotations

from mosaic_sdk.hookspecs import PROTOCOL_VERSION
from mosaic_sdk.plugins import PluginError, WorkerHandle, discover_workers
from mosaic_sdk.runner.reporting import Reporter, current_reporter


class WorkerProtocolError(PluginError):
    """The worker speaks a protocol version this SDK does not."""


def resolve_worker(worker: str | WorkerHandle, *, reporter: Reporter | None = None) -> WorkerHandle:
    """A handle for a worker name (discovery) or the handle itself; checks its protocol.
    Plugins that failed to load are warned about to ``reporter`` (default: the process's)."""
    if isinstance(worker, str):
        registry = discover_workers()
        handle = registry.get(worker)
        for name, err in registry.plugin_errors.items():
            (reporter or current_reporter()).warn(
                f"plugin {name!r} ({err.distribution or '?'}) failed to "
                f"load: {err.error_type}: {err.message}; runs go on without it "
                f"(`mosaic plugins list` shows it; MOSAIC_DISABLE_PLUGINS={name} hides it)"
            )
    else:
        handle = worker
    version = handle.protocol_version()
    if version != PROTOCOL_VERSION:
        raise WorkerProtocolError(
            f"worker {handle.name!r} speaks worker protocol {version}, this SDK speaks "
            f"{PROTOCOL_VERSION}; install a version of the worker (or of mosaic-worker-sdk) "
            "made for the other"
        )
    return handle
