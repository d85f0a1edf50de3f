"""The worker under test: how it was found, its handle, and its recorded runs (cached)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mosaic_sdk.conformance.config_source import (
    ConformanceConfig,
    ConformanceConfigError,
    check_against_model,
    file_config,
)
from mosaic_sdk.conformance.fastlane_v1 import probe_fastlane
from mosaic_sdk.conformance.recording import RecordedRun, RunPlan, record_run, streaming
from mosaic_sdk.conformance.results import CheckSkipped
from mosaic_sdk.plugins import (
    UnknownWorkerError,
    WorkerHandle,
    WorkerLoadError,
    discover_workers,
    load_unchecked,
)
from mosaic_sdk.runner.storage.ids import new_run_id
from mosaic_sdk.submit.dispatch import dispatcher_config

if TYPE_CHECKING:
    from mosaic_sdk.contract import WorkerConfig

PLATFORM = "platform"
SDK = "sdk"
#: Conformance levels, loosest first: ``platform`` (what the deployed platform needs) and
#: ``sdk`` (everything the suite checks).
LEVELS: tuple[str, ...] = (PLATFORM, SDK)
#: ``MOSAIC_HEARTBEAT_INTERVAL`` (seconds) set for the telemetry runs.
HEARTBEAT_INTERVAL = 0.2
#: Seed of the recorded runs when the conformance config sets none.
DEFAULT_SEED = 12345
#: Seconds a worker gets to stop after SIGTERM before its group is killed.
STOP_TIMEOUT = 10.0
#: Seconds one recorded run may take before it is killed.
RUN_TIMEOUT = 120.0


def _seconds(variable: str, default: float) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{variable}={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise ValueError(f"{variable}={raw!r} must be > 0 seconds")
    return value


def stop_timeout() -> float:
    return _seconds("MOSAIC_CONFORMANCE_STOP_TIMEOUT", STOP_TIMEOUT)


def run_timeout() -> float:
    return _seconds("MOSAIC_CONFORMANCE_RUN_TIMEOUT", RUN_TIMEOUT)


#: A config that no worker can accept: the bad-config run writes it as its config file.
MALFORMED_CONFIG = '{"run_id": "conformance-bad-config", "seed": '
#: What the platform's forms add to a worker's config besides ``run_id`` and ``worker_id``
#: (the dispatcher logs the schema and passes both on): the dispatched run's config has them.
DISPATCHER_FORM_KEYS: dict[str, Any] = {
    "schema_id": "telemetry.step.default",
    "schema_definition": {"schema_id": "telemetry.step.default", "required_fields": []},
}
#: Run kinds that may be recorded together (two at a time).
RUN_KINDS: tuple[str, ...] = (
    "normal",
    "repeat",
    "stop",
    "dry_run",
    "bad_config",
    "fastlane",
    "dispatched",
)


def fastlane_available() -> bool:
    """Whether this SDK has its FastLane package (the FastLane checks need it)."""
    return importlib.util.find_spec("mosaic_sdk.fastlane") is not None


def fastlane_env() -> dict[str, str]:
    """The environment of the FastLane run: FastLane-only, slot 0, as the platform's launcher
    writes it (without the SDK's own ``MOSAIC_FASTLANE`` switch: a worker must publish on the
    platform's variables)."""
    # Optional part: this SDK may lack mosaic_sdk.fastlane (see fastlane_available).
    from mosaic_sdk.fastlane.environment import apply_fastlane_environment

    env: dict[str, str] = {}
    apply_fastlane_environment(env, fastlane_only=True, fastlane_slot=0, switch=False)
    return env


class HookError(RuntimeError):
    """A hook of the worker raised: the checks that need its answer report an ``error``
    verdict naming the hook (never a traceback)."""

    def __init__(self, hook: str, exc: BaseException) -> None:
        self.hook = hook
        text = str(exc).strip().splitlines()
        super().__init__(
            f"the worker's {hook} hook raised {type(exc).__name__}"
            + (f": {text[-1]}" if text else "")
        )


class WorkerSubject:
    """One worker under test, with a private ``MOSAIC_HOME`` for its runs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.environ = dict(os.environ)
        self.handle: WorkerHandle | None = None
        self.load_error: str | None = None
        self.discovery_error: WorkerLoadError | None = None
        self.duplicates: list[str] = []
        self._resolve()  # raises UnknownWorkerError before anything is created on disk
        self.tmp = Path(tempfile.mkdtemp(prefix="mosaic-conformance-"))
        self.home = self.tmp / "home"
        self.runs_dir = self.home / "runs"
        self.logs_dir = self.tmp / "logs"
        self.suffix = uuid.uuid4().hex[:8]
        self._runs: dict[str, RecordedRun] = {}
        self._run_locks: dict[str, threading.Lock] = {k: threading.Lock() for k in RUN_KINDS}
        self._memo: dict[str, Any] = {}

    # -- resolution ---------------------------------------------------------------------
    def _resolve(self) -> None:
        registry = discover_workers(environ=self.environ)
        if self.name in registry.workers:
            self.handle = registry.workers[self.name]
            return
        if self.name not in registry.errors:
            raise UnknownWorkerError(self.name, registry.names())
        err = self.discovery_error = registry.errors[self.name]
        # Discovery refused the worker: load its first entry point of that name without the
        # checks discovery makes, so the rest of the contract can still be tested.
        found = load_unchecked(self.name, environ=self.environ)
        self.duplicates = found.sources
        self.handle = found.handle
        if found.handle is None and not found.sources:  # a refusal we cannot reproduce
            self.load_error = f"{err.error_type}: {err.message}"
        elif found.handle is None:
            self.load_error = found.error

    def default_level(self) -> str:
        """``platform`` for an upstream-style worker (a ``get_worker_metadata()`` factory),
        else ``sdk``."""
        return PLATFORM if self.handle is not None and self.handle.style == "upstream" else SDK

    def require_handle(self) -> WorkerHandle:
        """The worker's handle, or skip: the worker could not be loaded at all."""
        if self.handle is None:
            raise CheckSkipped(f"the worker could not be loaded ({self.load_error})")
        return self.handle

    # -- cached facts -------------------------------------------------------------------
    def memo(self, key: str, compute: Any) -> Any:
        """``compute()`` once per subject (exceptions are cached and re-raised too)."""
        if key not in self._memo:
            try:
                self._memo[key] = (True, compute())
            except Exception as exc:  # noqa: BLE001
                self._memo[key] = (False, exc)
        ok, value = self._memo[key]
        if not ok:
            raise value
        return value

    def description(self) -> tuple[Any, Any]:
        """The validated ``(metadata, capabilities)``; skip when the worker cannot say."""
        handle = self.require_handle()
        try:
            return self.memo("describe", handle.describe)  # type: ignore[no-any-return]
        except Exception as exc:  # noqa: BLE001
            raise CheckSkipped(f"the worker does not describe itself ({exc})") from None

    def capability(self, name: str) -> Any:
        return getattr(self.description()[1], name)

    def config_model(self) -> type[WorkerConfig]:
        handle = self.require_handle()
        try:
            return self.memo("config_model", handle.config_model)
        except Exception as exc:  # noqa: BLE001
            raise CheckSkipped(f"the worker has no usable config model ({exc})") from None

    def conformance_config(self) -> dict[str, object]:
        return dict(self.conformance_source().data)

    def conformance_source(self) -> ConformanceConfig:
        """The conformance config (without ``run_id``) and its origin: the hook, else the
        worker's files (:func:`.config_source.file_config`), else ``{}`` (the defaults)."""
        return self.memo("conformance_config", self._find_conformance_config)  # type: ignore[no-any-return]

    def _find_conformance_config(self) -> ConformanceConfig:
        handle = self.require_handle()
        try:
            hooked = handle.conformance_config()
        except Exception as exc:  # noqa: BLE001 - every check that needs it reports an error
            raise HookError("mosaic_worker_conformance_config", exc) from None
        if hooked is not None:
            return ConformanceConfig(dict(hooked), "the mosaic_worker_conformance_config hook")
        found = file_config(handle.distribution, self.name)
        if found is None:
            return ConformanceConfig({}, "the config model's defaults")
        check_against_model(found, handle.config_model(), self.run_id("config"))
        return found

    def check_conformance_config(self) -> None:
        """Raise :class:`~.config_source.ConformanceConfigError` now for a malformed config
        given without the SDK."""
        if self.handle is None:
            return
        try:
            self.conformance_source()
        except ConformanceConfigError:
            raise
        except Exception:  # noqa: BLE001 - a failing hook is reported by the checks
            return

    def run_id(self, kind: str) -> str:
        return f"conformance-{self.name}-{kind}-{self.suffix}".replace("/", "_")[:128]

    # -- runs ---------------------------------------------------------------------------
    def plan(self, kind: str) -> RunPlan:
        if kind not in RUN_KINDS:
            raise ValueError(f"unknown run kind {kind!r}; known: {', '.join(RUN_KINDS)}")
        config = {"seed": DEFAULT_SEED, **self.conformance_config()}
        env = {"MOSAIC_HOME": str(self.home)}
        if kind in ("normal", "repeat"):
            env["MOSAIC_HEARTBEAT_INTERVAL"] = str(HEARTBEAT_INTERVAL)
        plan = RunPlan(kind, self.run_id(kind), config, extra_env=env)
        if kind == "stop":
            plan = replace(
                plan, stop_on_step=True, stop_at=self._stop_at(), stop_grace=stop_timeout()
            )
        elif kind == "dry_run":
            plan = replace(plan, argv_suffix=("--dry-run",))
        elif kind == "bad_config":
            plan = replace(plan, config_text=MALFORMED_CONFIG)
        elif kind == "fastlane":
            plan = replace(plan, extra_env={**env, **fastlane_env()}, probe=probe_fastlane)
        elif kind == "dispatched":
            # As MOSAIC's trainer daemon launches: a ULID run id, the form's worker id and
            # keys in the config file (written raw: the worker, not the SDK, judges it).
            ulid = self.memo("dispatched_run_id", new_run_id)
            worker_id = f"{self.name}-conformance"
            form = dispatcher_config({**config, **DISPATCHER_FORM_KEYS}, ulid, worker_id)
            text = json.dumps(form, indent=2)
            plan = replace(plan, run_id=ulid, config_text=text, dispatched_as=worker_id)
        return replace(plan, timeout=run_timeout())

    def _stop_at(self) -> float | None:
        """When to send SIGTERM to a worker whose lines all arrive at exit (no first step line
        to stop it at): at 60 % of its normal run's duration."""
        normal = self.run("normal")
        if normal.exited_at is None or normal.launch_error or streaming(normal)[0]:
            return None
        return max(0.2, 0.6 * (normal.exited_at - normal.started_at))

    def run(self, kind: str) -> RecordedRun:
        """The recorded run of that kind, launching it on first use."""
        handle = self.require_handle()
        with self._run_locks[kind]:
            if kind not in self._runs:
                self._runs[kind] = record_run(
                    handle, self.plan(kind), runs_dir=self.runs_dir, logs_dir=self.logs_dir
                )
            return self._runs[kind]

    def ensure_runs(self, kinds: Iterable[str], parallel: int = 2) -> None:
        """Record the runs of these kinds that are missing, ``parallel`` at a time."""
        if self.handle is None:
            return
        missing = [k for k in dict.fromkeys(kinds) if k not in self._runs]
        if not missing:
            return
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            list(pool.map(self._run_quietly, missing))

    def _run_quietly(self, kind: str) -> None:
        # A run that cannot be planned (a hook raised) is tried again by each check that
        # reads it, which reports the error as its verdict.
        with contextlib.suppress(CheckSkipped, HookError):
            self.run(kind)

    def planned_runs(self, checks: Iterable[Any], level: str | None = None) -> list[str]:
        """The run kinds the given checks read at ``level`` (default: every level), leaving
        out checks gated off this worker."""
        kinds: dict[str, None] = {}
        for check in checks:
            runs = check.runs if level is None else check.runs_for(level)
            try:
                gated_off = check.skip_reason(self) is not None
            except HookError:  # the check itself reports it as an error
                gated_off = True
            if runs and not gated_off:
                kinds.update(dict.fromkeys(runs))
        return list(kinds)

    def recorded_runs(self) -> list[RecordedRun]:
        return list(self._runs.values())

    def close(self) -> None:
        """Remove the temporary home (runs, logs)."""
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> WorkerSubject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
