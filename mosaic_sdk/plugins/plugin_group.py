"""Plugins that are not workers, installed through the ``mosaic.plugins`` entry-point group."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TypedDict, cast

import pluggy

from mosaic_sdk.plugins.entry_points import (
    Attempt,
    EntryPointCandidate,
    LoadPolicy,
    csv_names,
    has_hookimpls,
    installed_entry_points,
)
from mosaic_sdk.plugins.errors import LoadErrorDict, WorkerLoadError
from mosaic_sdk.plugins.guard import plugin_timeout

#: The entry-point group of plugins that are not workers.
PLUGIN_GROUP = "mosaic.plugins"
#: The name a plugin of the group is registered under in the plugin manager.
PLUGIN_PREFIX = "plugin:"


class _PluginEntryFields(TypedDict):
    name: str
    ok: bool
    distribution: str | None
    version: str | None
    entry_point: str | None
    hooks: list[str]


class PluginEntry(_PluginEntryFields, total=False):
    """One row of :func:`plugin_entries` (``mosaic plugins list --json``); ``error`` on a
    broken plugin's."""

    error: LoadErrorDict


@dataclass
class PluginInfo:
    """One plugin loaded from the ``mosaic.plugins`` group."""

    name: str
    distribution: str | None
    version: str | None
    entry_point: str
    #: The hooks it implements (sorted).
    hooks: list[str] = field(default_factory=list)

    def to_dict(self) -> PluginEntry:
        return cast(PluginEntry, {**asdict(self), "ok": True})


def plugin_group_candidates(environ: Mapping[str, str]) -> list[EntryPointCandidate]:
    """The entry points of the ``mosaic.plugins`` group (none when autoload is disabled)."""
    if environ.get("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "") not in ("", "0"):
        return []
    return installed_entry_points(PLUGIN_GROUP)


def plugin_object(obj: object, c: EntryPointCandidate) -> object:
    """The plugin a ``mosaic.plugins`` entry point's object stands for (a class is
    instantiated); ``TypeError`` when it implements no hook."""
    if inspect.isclass(obj):
        obj = obj()
    if not has_hookimpls(obj):
        raise TypeError(
            f"{c.value} has no @mosaic_sdk.hookimpl methods or functions; a mosaic.plugins "
            "entry point names a module, class or object implementing hooks of "
            "mosaic_sdk.hookspecs"
        )
    return obj


def enabled_candidates(environ: Mapping[str, str]) -> dict[str, list[EntryPointCandidate]]:
    """The entry points of the group by name, without those ``MOSAIC_DISABLE_PLUGINS``
    names."""
    disabled = set(csv_names(environ.get("MOSAIC_DISABLE_PLUGINS")))
    by_name: dict[str, list[EntryPointCandidate]] = {}
    for c in plugin_group_candidates(environ):
        if c.name not in disabled:
            by_name.setdefault(c.name, []).append(c)
    return by_name


def load_plugin_group(
    pm: pluggy.PluginManager,
    environ: Mapping[str, str] | None = None,
    policy: LoadPolicy | None = None,
) -> tuple[dict[str, PluginInfo], dict[str, WorkerLoadError]]:
    """Register every plugin of the ``mosaic.plugins`` group on ``pm``; returns the loaded
    ones and the errors of the others, by entry-point name. Never raises for a broken one:
    each is loaded as workers are (``policy``: the probe and the time bound of
    :func:`~mosaic_sdk.plugins.discover_workers`; probed here when not given)."""
    env = os.environ if environ is None else environ
    by_name = enabled_candidates(env)
    if policy is None:
        policy = LoadPolicy(plugin_timeout(env))
        policy.probe("plugin", [g[0] for g in by_name.values() if len(g) == 1])
    loaded: dict[str, PluginInfo] = {}
    errors: dict[str, WorkerLoadError] = {}
    for name, group in sorted(by_name.items()):
        if len(group) > 1:
            sources = ", ".join(c.source() for c in group)
            errors[name] = WorkerLoadError(
                name=name,
                distribution=group[0].distribution,
                error_type="DuplicatePluginName",
                message=f"{len(group)} mosaic.plugins entry points are named {name!r}: "
                f"{sources}; uninstall or rename all but one",
            )
            continue
        c = group[0]
        outcome = policy.load("plugin", c, functools.partial(_register, pm, c))
        if isinstance(outcome, WorkerLoadError):
            errors[name] = outcome
            continue
        callers = pm.get_hookcallers(pm.get_plugin(PLUGIN_PREFIX + name)) or []
        hooks = sorted(caller.name for caller in callers)
        loaded[name] = PluginInfo(name, c.distribution, c.dist_version, c.value, hooks)
    return loaded, errors


def _register(
    pm: pluggy.PluginManager, c: EntryPointCandidate, attempt: Attempt
) -> object | WorkerLoadError:
    """Load ``c`` and register it as ``plugin:NAME`` (on a loader thread: whatever it raises
    is caught there)."""
    plugin = plugin_object(c.load(), c)
    if pm.get_plugin(PLUGIN_PREFIX + c.name) is None:
        attempt.register(pm, plugin, PLUGIN_PREFIX + c.name)
    return plugin


def plugin_entries(
    loaded: Mapping[str, PluginInfo], errors: Mapping[str, WorkerLoadError]
) -> list[PluginEntry]:
    """One JSON-ready dict per plugin of the group, broken ones included (``ok`` False)."""
    rows = [info.to_dict() for info in loaded.values()]
    for name, err in errors.items():
        rows.append(
            {
                "name": name,
                "ok": False,
                "distribution": err.distribution,
                "version": None,
                "entry_point": None,
                "hooks": [],
                "error": err.to_dict(),
            }
        )
    return sorted(rows, key=lambda r: r["name"])
