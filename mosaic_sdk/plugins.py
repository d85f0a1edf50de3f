"""The plugin framework: plugin manager, worker discovery and the upstream-style adapter.

Workers are found through the ``mosaic.workers`` entry-point group. An entry point names
either

* a *plugin*: a module, a class (instantiated with no arguments) or an object with
  ``@hookimpl`` methods (see :mod:`mosaic_sdk.hookspecs`), or
* an *upstream-style factory*: a zero-argument callable returning ``(metadata, capabilities)``
  as any objects with the platform's field names. It is adapted: its config keeps unknown keys
  in ``extras`` and it is launched as ``python -m <top-level package>.cli --config PATH``.

Each entry point is loaded on its own; one that fails is recorded as a
:class:`WorkerLoadError` and discovery carries on. Duplicate names and a ``worker_type`` that
differs from the entry-point name are errors of that worker.

Environment (as pytest's equivalents): ``MOSAIC_DISABLE_PLUGIN_AUTOLOAD=1`` loads no entry
points; ``MOSAIC_DISABLE_WORKERS=a,b`` skips those names; ``MOSAIC_TRACE_HOOKS=1`` traces
every hook call to stderr; ``MOSAIC_PLUGINS=name=module[:attr],...`` adds workers that are
not installed as distributions (handy in tests and during development).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import pluggy
from pydantic import ValidationError

from mosaic_sdk import hookspecs
from mosaic_sdk.contract import (
    LaunchCommand,
    WorkerCapabilities,
    WorkerConfig,
    WorkerConfigWithExtras,
    WorkerMetadata,
)
from mosaic_sdk.hookspecs import PROJECT_NAME, PROTOCOL_VERSION, hookimpl

ENTRY_POINT_GROUP = "mosaic.workers"

#: SDK plugins registered in every plugin manager (imported when present).
BUILTIN_PLUGINS: tuple[str, ...] = ("mosaic_sdk.plugins", "mosaic_sdk.fastlane.plugin")


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "error_type": self.error_type,
            "message": self.message,
        }


@dataclass
class _Candidate:
    name: str
    value: str
    distribution: str | None
    dist_version: str | None
    load: Any  # zero-argument callable returning the named object


# --- the SDK's own default answers -------------------------------------------------------------


@hookimpl(trylast=True)
def mosaic_worker_protocol_version() -> int:
    """Workers built on this SDK speak its protocol unless they say otherwise."""
    return PROTOCOL_VERSION


@hookimpl(trylast=True)
def mosaic_worker_config_model() -> type[WorkerConfig]:
    """A worker that declares no config model gets the plain ``WorkerConfig``."""
    return WorkerConfig


# --- upstream-style adapter -------------------------------------------------------------------


def _as_tuple(value: Any) -> Any:
    if isinstance(value, (list, set, frozenset)):
        return tuple(value)
    return value


def _fields_of(obj: Any, model: type[Any]) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        source = dict(obj)
    else:
        source = {n: getattr(obj, n) for n in model.model_fields if hasattr(obj, n)}
    return {k: _as_tuple(v) for k, v in source.items() if k in model.model_fields}


class UpstreamConfig(WorkerConfigWithExtras):
    """Config of an upstream-style worker: its own keys are unknown to us, so kept as extras."""


class UpstreamWorkerAdapter:
    """Presents an upstream-style ``get_worker_metadata()`` factory as a worker plugin."""

    def __init__(self, name: str, factory: Any, module: str) -> None:
        self.name = name
        self.factory = factory
        self.module = module
        self.package = module.split(".")[0]

    @hookimpl
    def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        result = self.factory()
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(
                f"{self.module} factory returned {type(result).__name__}; "
                "expected a (metadata, capabilities) pair"
            )
        meta, caps = result
        return (
            WorkerMetadata(**_fields_of(meta, WorkerMetadata)),
            WorkerCapabilities(**_fields_of(caps, WorkerCapabilities)),
        )

    @hookimpl
    def mosaic_worker_config_model(self) -> type[WorkerConfig]:
        return UpstreamConfig

    @hookimpl
    def mosaic_worker_launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        return LaunchCommand(
            argv=(sys.executable, "-m", f"{self.package}.cli", "--config", str(config_path))
        )


# --- handles ----------------------------------------------------------------------------------


def _has_hookimpls(obj: Any) -> bool:
    attr = f"{PROJECT_NAME}_impl"
    for name in dir(obj):
        if name.startswith("mosaic_"):
            member = getattr(obj, name, None)
            if member is not None and hasattr(member, attr):
                return True
    return False


class WorkerHandle:
    """One discovered worker: calls its hooks (with the SDK's and other non-worker plugins)."""

    def __init__(
        self,
        name: str,
        plugin: Any,
        pm: pluggy.PluginManager,
        *,
        distribution: str | None,
        dist_version: str | None,
        entry_point: str,
        style: str,
    ) -> None:
        self.name = name
        self.plugin = plugin
        self.pm = pm
        self.distribution = distribution
        self.dist_version = dist_version
        self.entry_point = entry_point
        self.style = style  # "plugin" or "upstream"
        self._callers: dict[str, Any] = {}
        self._description: tuple[WorkerMetadata, WorkerCapabilities] | None = None

    def _hook(self, hook_name: str) -> Any:
        caller = self._callers.get(hook_name)
        if caller is None:
            others = [p for p in _worker_plugins(self.pm) if p is not self.plugin]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            self._callers[hook_name] = caller
        return caller

    def describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        """Metadata and capabilities, validated (cached after the first call)."""
        if self._description is None:
            result = self._hook("mosaic_worker_describe")()
            if result is None:
                raise TypeError("the plugin implements no mosaic_worker_describe hook")
            meta, caps = result
            if not isinstance(meta, WorkerMetadata):
                meta = WorkerMetadata(**_fields_of(meta, WorkerMetadata))
            if not isinstance(caps, WorkerCapabilities):
                caps = WorkerCapabilities(**_fields_of(caps, WorkerCapabilities))
            self._description = (meta, caps)
        return self._description

    @property
    def metadata(self) -> WorkerMetadata:
        return self.describe()[0]

    @property
    def capabilities(self) -> WorkerCapabilities:
        return self.describe()[1]

    def config_model(self) -> type[WorkerConfig]:
        model = self._hook("mosaic_worker_config_model")()
        if not (inspect.isclass(model) and issubclass(model, WorkerConfig)):
            raise TypeError(
                f"worker {self.name!r}: mosaic_worker_config_model returned {model!r}, "
                "not a WorkerConfig subclass"
            )
        return model

    def launch_command(self, config_path: Path, config: WorkerConfig, run_dir: Path) -> Any:
        cmd = self._hook("mosaic_worker_launch_command")(
            config_path=config_path, config=config, run_dir=run_dir
        )
        if cmd is None:
            raise TypeError(f"worker {self.name!r} implements no mosaic_worker_launch_command")
        if not isinstance(cmd, LaunchCommand):
            cmd = LaunchCommand.model_validate(cmd)
        return cmd

    def conformance_config(self) -> dict[str, Any] | None:
        result = self._hook("mosaic_worker_conformance_config")()
        return None if result is None else dict(result)

    def make_env(self, config: WorkerConfig) -> Any:
        return self._hook("mosaic_worker_make_env")(config=config)

    def details(self) -> dict[str, Any]:
        result = self._hook("mosaic_worker_details")()
        return {} if result is None else dict(result)

    def protocol_version(self) -> int:
        return int(self._hook("mosaic_worker_protocol_version")())

    def summary(self) -> dict[str, Any]:
        meta, caps = self.describe()
        return {
            "name": self.name,
            "ok": True,
            "version": meta.version,
            "distribution": self.distribution,
            "entry_point": self.entry_point,
            "style": self.style,
            "display_name": meta.name,
            "description": meta.description,
        }


def _worker_plugins(pm: pluggy.PluginManager) -> list[Any]:
    return [p for n, p in pm.list_name_plugin() if n.startswith("worker:")]


# --- discovery ------------------------------------------------------------------------------


def create_plugin_manager(environ: Mapping[str, str] | None = None) -> pluggy.PluginManager:
    """A plugin manager with the ``mosaic`` hookspecs and the SDK's built-in plugins."""
    env = os.environ if environ is None else environ
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for module_name in BUILTIN_PLUGINS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional part of the SDK that is absent
            continue
        if pm.get_plugin(f"builtin:{module_name}") is None:
            pm.register(module, name=f"builtin:{module_name}")
    if env.get("MOSAIC_TRACE_HOOKS", "") not in ("", "0"):
        pm.trace.root.setwriter(lambda text: sys.stderr.write(text))
        pm.enable_tracing()
    return pm


def _csv(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _entry_point_candidates(environ: Mapping[str, str]) -> list[_Candidate]:
    found: list[_Candidate] = []
    seen: set[tuple[str, str, str | None]] = set()
    if environ.get("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0"):
        for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            dist_name = dist.metadata["Name"] if dist is not None else None
            key = (ep.name, ep.value, dist_name)
            if key in seen:  # the same distribution seen twice on sys.path
                continue
            seen.add(key)
            found.append(
                _Candidate(ep.name, ep.value, dist_name, dist.version if dist else None, ep.load)
            )
    for spec in _csv(environ.get("MOSAIC_PLUGINS")):
        name, sep, value = spec.partition("=")
        if not sep or not name.strip() or not value.strip():
            found.append(_Candidate(spec, spec, "MOSAIC_PLUGINS", None, _bad_spec(spec)))
            continue
        found.append(
            _Candidate(name.strip(), value.strip(), "MOSAIC_PLUGINS", None, _loader(value.strip()))
        )
    return found


def _bad_spec(spec: str) -> Any:
    def load() -> Any:
        raise ValueError(f"MOSAIC_PLUGINS entry {spec!r} is not of the form name=module[:attr]")

    return load


def _loader(value: str) -> Any:
    def load() -> Any:
        module_name, _, attr = value.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
        return obj

    return load


def _error(c: _Candidate, exc: BaseException) -> WorkerLoadError:
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


class WorkerRegistry:
    """The result of discovery: usable workers by name, and the errors of the others."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.workers: dict[str, WorkerHandle] = {}
        self.errors: dict[str, WorkerLoadError] = {}

    def names(self) -> list[str]:
        return sorted({*self.workers, *self.errors})

    def get(self, name: str) -> WorkerHandle:
        """The handle of ``name``; raises UnknownWorkerError or WorkerUnavailableError."""
        if name in self.workers:
            return self.workers[name]
        if name in self.errors:
            raise WorkerUnavailableError(self.errors[name])
        raise UnknownWorkerError(name, self.names())

    def entries(self) -> list[dict[str, Any]]:
        """One dict per worker, broken ones included (``ok`` False, with ``error``)."""
        rows: list[dict[str, Any]] = []
        for name in self.names():
            if name in self.workers:
                rows.append(self.workers[name].summary())
            else:
                err = self.errors[name]
                rows.append(
                    {
                        "name": name,
                        "ok": False,
                        "version": None,
                        "distribution": err.distribution,
                        "error": err.to_dict(),
                    }
                )
        return rows


def _plugin_from(obj: Any, c: _Candidate) -> tuple[Any, str]:
    if inspect.ismodule(obj):
        return obj, "plugin"
    if inspect.isclass(obj):
        instance = obj()
        if _has_hookimpls(instance):
            return instance, "plugin"
        raise TypeError(f"{c.value} is a class without @hookimpl methods")
    if _has_hookimpls(obj):
        return obj, "plugin"
    if callable(obj):
        module = c.value.partition(":")[0]
        return UpstreamWorkerAdapter(c.name, obj, module), "upstream"
    raise TypeError(
        f"{c.value} is a {type(obj).__name__}: expected a module, class or object with "
        "@mosaic_sdk.hookimpl methods, or a callable returning (metadata, capabilities)"
    )


def discover_workers(
    *,
    environ: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
    pm: pluggy.PluginManager | None = None,
) -> WorkerRegistry:
    """Load every worker; never raises for a broken one (see ``WorkerRegistry.errors``).

    ``extra`` maps names to plugin objects (or upstream factories) to add without entry
    points, e.g. in tests.
    """
    env = os.environ if environ is None else environ
    pm = pm or create_plugin_manager(env)
    registry = WorkerRegistry(pm)
    disabled = set(_csv(env.get("MOSAIC_DISABLE_WORKERS")))
    candidates = _entry_point_candidates(env)
    for name, obj in (extra or {}).items():
        candidates.append(_Candidate(name, f"<{type(obj).__name__}>", None, None, lambda o=obj: o))

    by_name: dict[str, list[_Candidate]] = {}
    for c in candidates:
        if c.name not in disabled:
            by_name.setdefault(c.name, []).append(c)

    for name, group in sorted(by_name.items()):
        if len(group) > 1:
            sources = ", ".join(f"{c.distribution or '?'} ({c.value})" for c in group)
            registry.errors[name] = WorkerLoadError(
                name=name,
                distribution=group[0].distribution,
                error_type="DuplicateWorkerName",
                message=f"{len(group)} entry points are named {name!r}: {sources}; "
                "uninstall or rename all but one",
            )
            continue
        c = group[0]
        plugin_name = f"worker:{name}"
        try:
            plugin, style = _plugin_from(c.load(), c)
            pm.register(plugin, name=plugin_name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken plugin (even one calling
            registry.errors[name] = _error(c, exc)  # sys.exit at import) must not stop discovery
            continue
        handle = WorkerHandle(
            name,
            plugin,
            pm,
            distribution=c.distribution,
            dist_version=c.dist_version,
            entry_point=c.value,
            style=style,
        )
        try:
            _, caps = handle.describe()
            if caps.worker_type != name:
                raise ValueError(
                    f"capabilities.worker_type is {caps.worker_type!r} but the entry point is "
                    f"named {name!r}; make them equal"
                )
        except Exception as exc:  # noqa: BLE001
            pm.unregister(name=plugin_name)
            registry.errors[name] = _error(c, exc)
            continue
        registry.workers[name] = handle
    return registry


def load_worker(name: str, *, environ: Mapping[str, str] | None = None) -> WorkerHandle:
    """Discover and return one worker (raises UnknownWorkerError / WorkerUnavailableError)."""
    return discover_workers(environ=environ).get(name)


__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "PluginError",
    "UnknownWorkerError",
    "UpstreamConfig",
    "UpstreamWorkerAdapter",
    "WorkerHandle",
    "WorkerLoadError",
    "WorkerRegistry",
    "WorkerUnavailableError",
    "create_plugin_manager",
    "discover_workers",
    "load_worker",
]
