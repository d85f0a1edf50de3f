"""Discovery: the plugin manager and the ``mosaic.workers`` entry points, one at a time."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pluggy

from mosaic_sdk import hookspecs
from mosaic_sdk.hookspecs import PROJECT_NAME
from mosaic_sdk.plugins.choice import (
    Contender,
    WorkerChoice,
    address,
    choose,
    read_preferences,
    split_address,
)
from mosaic_sdk.plugins.entry_points import (
    Attempt,
    EntryPointCandidate,
    LoadPolicy,
    csv_names,
    has_hookimpls,
    installed_entry_points,
    load_error,
)
from mosaic_sdk.plugins.errors import UnknownWorkerError, WorkerLoadError, WorkerUnavailableError
from mosaic_sdk.plugins.guard import (
    plugin_output_to_stderr,
    plugin_timeout,
)
from mosaic_sdk.plugins.gym_gui_stand_in import install_gym_gui_stand_in
from mosaic_sdk.plugins.handle import WorkerEntry, WorkerHandle
from mosaic_sdk.plugins.platform_entry import PLUGIN_ATTRIBUTE
from mosaic_sdk.plugins.plugin_group import PluginInfo, enabled_candidates, load_plugin_group
from mosaic_sdk.plugins.upstream import UpstreamWorkerAdapter

ENTRY_POINT_GROUP = "mosaic.workers"

#: SDK plugins registered in every plugin manager (imported when present).
BUILTIN_PLUGINS: tuple[str, ...] = (
    "mosaic_sdk.plugins.defaults",
    "mosaic_sdk.plugins.fastlane_provider",
)


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


def entry_point_candidates(environ: Mapping[str, str]) -> list[EntryPointCandidate]:
    found: list[EntryPointCandidate] = []
    if environ.get("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0"):
        found += installed_entry_points(ENTRY_POINT_GROUP)
    for spec in csv_names(environ.get("MOSAIC_PLUGINS")):
        name, sep, value = (part.strip() for part in spec.partition("="))
        if not sep or not name or not value:
            found.append(EntryPointCandidate(spec, spec, "MOSAIC_PLUGINS", None, _bad_spec(spec)))
            continue
        probe = _LOADABLE.fullmatch(value) is not None
        found.append(
            EntryPointCandidate(name, value, "MOSAIC_PLUGINS", None, _loader(value), probe=probe)
        )
    return found


#: ``module[:attr]`` as an entry point writes it (what a probe's child can load by name).
_LOADABLE = re.compile(r"[\w.]+(\s*:\s*[\w.]+)?")


def _bad_spec(spec: str) -> Callable[[], object]:
    def load() -> object:
        raise ValueError(f"MOSAIC_PLUGINS entry {spec!r} is not of the form name=module[:attr]")

    return load


def _given(obj: object) -> Callable[[], object]:
    def load() -> object:
        return obj

    return load


def _loader(value: str) -> Callable[[], object]:
    def load() -> object:
        module_name, _, attr = value.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
        return obj

    return load


class WorkerRegistry:
    """The result of discovery: usable workers by name, and the errors of the others.

    When several entry points share a name (:mod:`mosaic_sdk.plugins.choice`), ``workers`` /
    ``errors`` hold what the bare name means, ``choices`` why, and ``by_address`` /
    ``address_errors`` every contender by its ``NAME@DISTRIBUTION`` address.
    """

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.workers: dict[str, WorkerHandle] = {}
        self.errors: dict[str, WorkerLoadError] = {}
        #: Names shared by several entry points: which one the bare name means, and why.
        self.choices: dict[str, WorkerChoice] = {}
        #: The contenders of shared names, by address (the chosen one too), and the broken ones.
        self.by_address: dict[str, WorkerHandle] = {}
        self.address_errors: dict[str, WorkerLoadError] = {}
        #: Plugins of the ``mosaic.plugins`` group, and the errors of the broken ones (by name).
        self.plugins: dict[str, PluginInfo] = {}
        self.plugin_errors: dict[str, WorkerLoadError] = {}

    def names(self) -> list[str]:
        """Every name :meth:`get` knows: bare names, and the addresses of shared ones."""
        return sorted({*self.workers, *self.errors, *self.by_address, *self.address_errors})

    def get(self, name: str) -> WorkerHandle:
        """The handle of ``name`` (a bare name, or ``NAME@DISTRIBUTION``); raises
        UnknownWorkerError or WorkerUnavailableError."""
        if name in self.workers:
            return self.workers[name]
        if name in self.errors:
            raise WorkerUnavailableError(self.errors[name])
        bare, dist = split_address(name)
        if dist is not None:
            canonical = address(bare, dist)
            if canonical in self.by_address:
                return self.by_address[canonical]
            if canonical in self.address_errors:
                raise WorkerUnavailableError(self.address_errors[canonical])
            handle = self.workers.get(bare)
            if handle is not None and address(bare, handle.distribution) == canonical:
                return handle  # the one worker of that name, addressed in full
        raise UnknownWorkerError(name, self.names())

    def entries(self) -> list[WorkerEntry]:
        """One dict per worker, broken ones included (``ok`` False, with ``error``). A shared
        name's row carries ``choice`` (:meth:`WorkerChoice.to_dict`); each contender the bare
        name does not mean follows it as a row of its own, named by its address, with
        ``alternative_of``."""
        rows: list[WorkerEntry] = []
        for name in sorted({*self.workers, *self.errors}):
            rows.append(self._row(name, self.workers.get(name), self.errors.get(name)))
            choice = self.choices.get(name)
            if choice is None:
                continue
            rows[-1]["choice"] = choice.to_dict()
            for other in choice.others():
                row = self._row(
                    other.address,
                    self.by_address.get(other.address),
                    self.address_errors.get(other.address),
                )
                row["alternative_of"] = name
                rows.append(row)
        return rows

    @staticmethod
    def _row(name: str, handle: WorkerHandle | None, err: WorkerLoadError | None) -> WorkerEntry:
        if handle is not None:
            return handle.summary()
        assert err is not None
        return {
            "name": name,
            "ok": False,
            "version": None,
            "distribution": err.distribution,
            "error": err.to_dict(),
        }


def plugin_from(obj: object, c: EntryPointCandidate) -> tuple[object, str]:
    """The plugin an entry point's object stands for, and its style (``plugin`` or
    ``upstream``): the plugin an object's ``__mosaic_plugin__`` names (a module name or the
    plugin; :func:`platform_factory`), a module, a class with ``@hookimpl`` methods
    (instantiated) or an object with them; any other callable is an upstream-style
    ``get_worker_metadata()`` factory, adapted."""
    carried = getattr(obj, PLUGIN_ATTRIBUTE, None) if not inspect.ismodule(obj) else None
    if carried is not None:
        target = importlib.import_module(carried) if isinstance(carried, str) else carried
        if not (inspect.ismodule(target) or inspect.isclass(target) or has_hookimpls(target)):
            raise TypeError(
                f"{c.value} names {target!r} as its plugin ({PLUGIN_ATTRIBUTE}), which is "
                "not a module, class or object with @mosaic_sdk.hookimpl methods"
            )
        plugin, _ = _hook_provider(target, c)
        return plugin, "plugin"
    return _hook_provider(obj, c)


def _hook_provider(obj: object, c: EntryPointCandidate) -> tuple[object, str]:
    if inspect.ismodule(obj):
        return obj, "plugin"
    if inspect.isclass(obj):
        instance = obj()
        if has_hookimpls(instance):
            return instance, "plugin"
        raise TypeError(f"{c.value} is a class without @hookimpl methods")
    if has_hookimpls(obj):
        return obj, "plugin"
    if callable(obj):
        module = c.value.partition(":")[0]
        return UpstreamWorkerAdapter(c.name, obj, module), "upstream"
    raise TypeError(
        f"{c.value} is a {type(obj).__name__}: expected a module, class or object with "
        "@mosaic_sdk.hookimpl methods, or a callable returning (metadata, capabilities)"
    )


def _canonical_name(text: str) -> str:
    """A bare name as given; ``NAME@DISTRIBUTION`` with the distribution as pip spells it."""
    bare, dist = split_address(text)
    return text if dist is None else address(bare, dist)


def load_unguarded(
    c: EntryPointCandidate,
    name: str,
    plugin_name: str,
    pm: pluggy.PluginManager,
    attempt: Attempt | None = None,
    *,
    check: bool = True,
) -> WorkerHandle | WorkerLoadError:
    """Load ``c``, register its plugin as ``plugin_name`` and (with ``check``) check that it
    describes itself as ``name``; the handle, or the error (then nothing stays registered).
    Catches whatever the plugin raises, ``SystemExit`` included: run it where that is the
    plugin's, on a loader thread (:func:`guarded_load`) or in the probe's child."""
    attempt = attempt or Attempt()
    try:
        plugin, style = plugin_from(c.load(), c)
        attempt.register(pm, plugin, plugin_name)
    except BaseException as exc:  # noqa: BLE001 - a broken plugin (even one calling
        return load_error(c, exc)  # sys.exit at import) must not stop discovery
    handle = WorkerHandle(
        c.name,
        plugin,
        pm,
        distribution=c.distribution,
        dist_version=c.dist_version,
        entry_point=c.value,
        style=style,
    )
    if not check:
        return handle
    try:
        _, caps = handle.describe()
        if caps.worker_type != name:
            raise ValueError(
                f"capabilities.worker_type is {caps.worker_type!r} but the entry point is "
                f"named {name!r}; make them equal"
            )
    except BaseException as exc:  # noqa: BLE001 - the factory runs here: its SystemExit too
        attempt.unregister()
        return load_error(c, exc)
    return handle


def _load(
    c: EntryPointCandidate,
    name: str,
    plugin_name: str,
    pm: pluggy.PluginManager,
    policy: LoadPolicy,
) -> WorkerHandle | WorkerLoadError:
    """:func:`load_unguarded` under ``policy``: on a loader thread, within the time bound,
    or the probe's verdict."""
    return policy.load(
        "worker", c, lambda attempt: load_unguarded(c, name, plugin_name, pm, attempt)
    )


def _load_contenders(
    registry: WorkerRegistry,
    name: str,
    group: list[EntryPointCandidate],
    preferred: str | None,
    notes: list[str],
    policy: LoadPolicy,
) -> None:
    """Several entry points named ``name``: load each under its address, let the rule of
    :mod:`mosaic_sdk.plugins.choice` pick the one the bare name means."""
    group = sorted(group, key=lambda c: address(name, c.distribution))
    shared = f"{len(group)} entry points are named {name!r}: " + ", ".join(
        c.source() for c in group
    )
    addresses = [address(name, c.distribution) for c in group]
    if len(set(addresses)) < len(addresses):
        registry.errors[name] = WorkerLoadError(
            name,
            group[0].distribution,
            "DuplicateWorkerName",
            f"{shared}; some come from the same distribution and cannot be told apart: "
            "uninstall or rename all but one",
        )
        return
    outcomes: dict[str, WorkerHandle | WorkerLoadError] = {}
    contenders: list[Contender] = []
    for c, addr in zip(group, addresses, strict=True):
        outcome = _load(c, name, f"worker:{addr}", registry.pm, policy)
        outcomes[addr] = outcome
        if isinstance(outcome, WorkerHandle):
            contenders.append(Contender(addr, c.distribution, c.value, outcome.style))
        else:
            why = f"{outcome.error_type}: {outcome.message}"
            contenders.append(Contender(addr, c.distribution, c.value, None, why))
    choice = choose(name, contenders, preferred, notes)
    registry.choices[name] = choice
    for addr, outcome in outcomes.items():
        if isinstance(outcome, WorkerHandle):
            if addr != choice.chosen:
                outcome.name = addr  # its runs are recorded under the name that reaches it
            registry.by_address[addr] = outcome
        else:
            registry.address_errors[addr] = replace(outcome, name=addr)
    if choice.chosen is None:
        registry.errors[name] = WorkerLoadError(
            name,
            None,
            "DuplicateWorkerName",
            f"{shared}; the rule cannot choose ({choice.reason}): {choice.how_to_choose()}",
        )
        return
    chosen = outcomes[choice.chosen]
    if isinstance(chosen, WorkerHandle):
        registry.workers[name] = chosen
    else:
        registry.errors[name] = chosen


def discover_workers(
    *,
    environ: Mapping[str, str] | None = None,
    extra: Mapping[str, object] | None = None,
    pm: pluggy.PluginManager | None = None,
) -> WorkerRegistry:
    """Load every worker, and the plugins of the ``mosaic.plugins`` group (registered on the
    manager, so every worker's runs call them); never raises for a broken one (see
    ``WorkerRegistry.errors`` and ``plugin_errors``). Installs the ``gym_gui`` stand-in first.
    ``extra`` maps names to plugin objects (or upstream factories) to add without entry points.
    """
    env = os.environ if environ is None else environ
    with plugin_output_to_stderr():
        install_gym_gui_stand_in()  # upstream-style workers import gym_gui.core.worker
        pm = pm or create_plugin_manager(env)
        registry = WorkerRegistry(pm)

        disabled = {_canonical_name(n) for n in csv_names(env.get("MOSAIC_DISABLE_WORKERS"))}
        candidates = entry_point_candidates(env)
        for name, obj in (extra or {}).items():
            candidates.append(
                EntryPointCandidate(name, f"<{type(obj).__name__}>", None, None, _given(obj))
            )

        by_name: dict[str, list[EntryPointCandidate]] = {}
        for c in candidates:
            if c.name not in disabled and address(c.name, c.distribution) not in disabled:
                by_name.setdefault(c.name, []).append(c)

        # every entry point of both groups in one probe (one child process for all that need it)
        policy = LoadPolicy(plugin_timeout(env))
        policy.probe_items(
            [
                group[0].probe_item("plugin")
                for group in enabled_candidates(env).values()
                if len(group) == 1 and group[0].probe
            ]
            + [c.probe_item("worker") for group in by_name.values() for c in group if c.probe]
        )
        registry.plugins, registry.plugin_errors = load_plugin_group(pm, env, policy)

        preferences, preference_problems = read_preferences(env)
        for name, group in sorted(by_name.items()):
            if len(group) > 1:
                _load_contenders(
                    registry, name, group, preferences.get(name), preference_problems, policy
                )
                continue
            outcome = _load(group[0], name, f"worker:{name}", pm, policy)
            if isinstance(outcome, WorkerHandle):
                registry.workers[name] = outcome
            else:
                registry.errors[name] = outcome
        return registry


@dataclass
class UncheckedLoad:
    """What :func:`load_unchecked` found: a handle (or why none), and every source of the name."""

    handle: WorkerHandle | None
    sources: list[str]
    error: str | None


def load_unchecked(name: str, *, environ: Mapping[str, str] | None = None) -> UncheckedLoad:
    """Load the first entry point named ``name`` without the checks discovery makes, for tools
    that inspect a worker discovery refuses (a ``worker_type`` mismatch, a duplicate name),
    such as the conformance suite."""
    env = os.environ if environ is None else environ
    candidates = [c for c in entry_point_candidates(env) if c.name == name]
    sources = [c.source() for c in candidates]
    if not candidates:
        return UncheckedLoad(None, sources, "no entry point of that name")
    c = candidates[0]
    with plugin_output_to_stderr():
        install_gym_gui_stand_in()
        pm = create_plugin_manager(env)
        policy = LoadPolicy(plugin_timeout(env), fatal_only=True)
        policy.probe("worker", [c])
        outcome = policy.load(
            "worker",
            c,
            lambda attempt: load_unguarded(c, name, f"worker:{name}", pm, attempt, check=False),
        )
    if isinstance(outcome, WorkerLoadError):
        return UncheckedLoad(None, sources, f"{outcome.error_type}: {outcome.message}")
    return UncheckedLoad(outcome, sources, None)


def load_worker(name: str, *, environ: Mapping[str, str] | None = None) -> WorkerHandle:
    """Discover and return one worker (raises UnknownWorkerError / WorkerUnavailableError)."""
    return discover_workers(environ=environ).get(name)
