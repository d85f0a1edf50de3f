"""The plugin framework: plugin manager, worker discovery and the upstream-style adapter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mosaic_sdk.lazy_exports import LazyExports

if TYPE_CHECKING:
    from mosaic_sdk.plugins.discovery import (
        BUILTIN_PLUGINS,
        ENTRY_POINT_GROUP,
        UncheckedLoad,
        WorkerRegistry,
        create_plugin_manager,
        discover_workers,
        entry_point_candidates,
        load_unchecked,
        load_worker,
    )
    from mosaic_sdk.plugins.entry_points import EntryPointCandidate
    from mosaic_sdk.plugins.errors import (
        PluginError,
        UnknownWorkerError,
        WorkerLoadError,
        WorkerUnavailableError,
    )
    from mosaic_sdk.plugins.handle import WorkerHandle
    from mosaic_sdk.plugins.platform_entry import PlatformFactory, platform_factory
    from mosaic_sdk.plugins.plugin_group import PLUGIN_GROUP, PluginInfo, load_plugin_group
    from mosaic_sdk.plugins.upstream import UpstreamConfig, UpstreamWorkerAdapter
    from mosaic_sdk.plugins.wrapping import maybe_wrap_env

_LAZY = LazyExports(
    __name__,
    {
        **dict.fromkeys(
            (
                "BUILTIN_PLUGINS",
                "ENTRY_POINT_GROUP",
                "UncheckedLoad",
                "WorkerRegistry",
                "create_plugin_manager",
                "discover_workers",
                "entry_point_candidates",
                "load_unchecked",
                "load_worker",
            ),
            "mosaic_sdk.plugins.discovery",
        ),
        **dict.fromkeys(
            ("PluginError", "UnknownWorkerError", "WorkerLoadError", "WorkerUnavailableError"),
            "mosaic_sdk.plugins.errors",
        ),
        "EntryPointCandidate": "mosaic_sdk.plugins.entry_points",
        "WorkerHandle": "mosaic_sdk.plugins.handle",
        "PlatformFactory": "mosaic_sdk.plugins.platform_entry",
        "platform_factory": "mosaic_sdk.plugins.platform_entry",
        "PLUGIN_GROUP": "mosaic_sdk.plugins.plugin_group",
        "PluginInfo": "mosaic_sdk.plugins.plugin_group",
        "load_plugin_group": "mosaic_sdk.plugins.plugin_group",
        "UpstreamConfig": "mosaic_sdk.plugins.upstream",
        "UpstreamWorkerAdapter": "mosaic_sdk.plugins.upstream",
        "maybe_wrap_env": "mosaic_sdk.plugins.wrapping",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

# Spelled out (not _LAZY.all()) so that linters and type checkers see the names imported above.
__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "EntryPointCandidate",
    "PLUGIN_GROUP",
    "PluginError",
    "PlatformFactory",
    "PluginInfo",
    "UncheckedLoad",
    "UnknownWorkerError",
    "UpstreamConfig",
    "UpstreamWorkerAdapter",
    "WorkerHandle",
    "WorkerLoadError",
    "WorkerRegistry",
    "WorkerUnavailableError",
    "create_plugin_manager",
    "discover_workers",
    "entry_point_candidates",
    "load_plugin_group",
    "load_unchecked",
    "load_worker",
    "maybe_wrap_env",
    "platform_factory",
]
