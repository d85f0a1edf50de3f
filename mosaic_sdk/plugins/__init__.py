"""The plugin framework: plugin manager, worker discovery and the upstream-style adapter.

Workers are found through the ``mosaic.workers`` entry-point group. An entry point names
either

* a *plugin*: a module, a class (instantiated with no arguments) or an object with
  ``@hookimpl`` methods (see :mod:`mosaic_sdk.hookspecs`), or
* a *platform factory* made by :func:`platform_factory` in the plugin module
  (``get_worker_metadata = platform_factory(__name__)``): the platform calls it and gets its
  own ``gym_gui.core.worker`` classes; the SDK registers the module it carries as the plugin
  (:mod:`mosaic_sdk.plugins.platform_entry`), or
* an *upstream-style factory*: a zero-argument callable returning ``(metadata, capabilities)``
  as any objects with the platform's field names. It is adapted
  (:mod:`mosaic_sdk.plugins.upstream`).

Plugins that are not workers (observers, wrappers) are found through a second group,
``mosaic.plugins`` (:mod:`mosaic_sdk.plugins.plugin_group`), and registered on the same manager.

Each entry point is loaded on its own; one that fails is recorded as a
:class:`WorkerLoadError` and discovery carries on, whatever the plugin does: it is probed in a
throwaway child process first (:mod:`mosaic_sdk.plugins.probe`, remembered while it does not
change), then loaded on a thread of its own within ``MOSAIC_PLUGIN_TIMEOUT`` seconds, with
what it prints sent to stderr (:mod:`mosaic_sdk.plugins.guard`). A ``worker_type`` that
differs from the entry-point name is an error of that worker. When several entry points share
a name, each is reachable as ``NAME@DISTRIBUTION`` and a documented rule
(:mod:`mosaic_sdk.plugins.choice`; ``MOSAIC_PREFER_WORKER=NAME=DISTRIBUTION`` first) says
which one the bare name means.

Environment (as pytest's equivalents): ``MOSAIC_DISABLE_PLUGIN_AUTOLOAD=1`` loads no entry
points; ``MOSAIC_DISABLE_WORKERS=a,b`` skips those names; ``MOSAIC_TRACE_HOOKS=1`` traces
every hook call to stderr; ``MOSAIC_PLUGINS=name=module[:attr],...`` adds workers that are
not installed as distributions (handy in tests and during development).

Modules: ``discovery`` (manager, entry points, registry), ``guard`` (the in-process guard),
``probe`` and ``probe_child`` (the subprocess probe and its cache), ``choice`` (shared names),
``platform_entry`` (``platform_factory``), ``handle`` (``WorkerHandle``),
``upstream`` (the adapter), ``plugin_group`` (the ``mosaic.plugins`` group), ``errors``,
``defaults`` (the SDK's own trylast answers), ``wrapping`` (``maybe_wrap_env``, every FastLane
wrap through the hook), ``gym_gui_stand_in`` (``gym_gui.core.worker`` for upstream-style
workers when the GUI is absent, and the launcher their processes start through).

The names below are loaded on first use: a worker process started through
``python -m mosaic_sdk.plugins.gym_gui_stand_in`` does not pay for pluggy and pydantic.
"""

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
