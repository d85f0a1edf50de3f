"""How the MOSAIC trainer daemon starts a worker, and the run config it validates."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_sdk.contract import WorkerCapabilities, WorkerConfig
from mosaic_sdk.plugins import WorkerHandle

#: Where the platform's daemon listens by default (and the target its proxy reports to).
DEFAULT_DAEMON = "127.0.0.1:50055"
#: The longest ``run_name`` the daemon accepts.
RUN_NAME_MAX_LENGTH = 120
#: What the daemon's resources must at least be.
MIN_CPUS = 1
MIN_MEMORY_MB = 256
MAX_GPUS = 8

_ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}

#: The JSON Schema of the daemon's ``TrainRunConfig`` (draft 2020-12), as it validates it.
TRAIN_RUN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "TrainRunConfig",
    "type": "object",
    "additionalProperties": False,
    "required": ["run_name", "entry_point", "arguments", "environment", "resources", "artifacts"],
    "properties": {
        "run_name": {"type": "string", "minLength": 1, "maxLength": RUN_NAME_MAX_LENGTH},
        "entry_point": {"type": "string", "minLength": 1},
        "arguments": {"type": "array", "items": {"type": "string"}},
        "environment": _STRING_MAP,
        "resources": {
            "type": "object",
            "additionalProperties": False,
            "required": ["cpus", "memory_mb", "gpus"],
            "properties": {
                "cpus": {"type": "integer", "minimum": MIN_CPUS},
                "memory_mb": {"type": "integer", "minimum": MIN_MEMORY_MB},
                "gpus": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["requested"],
                    "properties": {
                        "requested": {"type": "integer", "minimum": 0, "maximum": MAX_GPUS},
                        "mandatory": {"type": "boolean"},
                    },
                },
            },
        },
        "artifacts": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "output_prefix": {"type": "string", "minLength": 1},
                "persist_logs": {"type": "boolean"},
                "keep_checkpoints": {"type": "boolean"},
            },
        },
        "metadata": {"type": "object"},
        "schedule": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_duration_seconds": {"type": "integer", "minimum": 1},
                "max_steps": {"type": "integer", "minimum": 1},
            },
        },
    },
}


class SubmitError(Exception):
    """A run that cannot be submitted, or did not end well: one line saying what and how."""


def is_ulid(text: object) -> bool:
    """Whether ``text`` is a ULID the daemon keeps as the run id (26 Crockford characters)."""
    return isinstance(text, str) and bool(_ULID.match(text))


@dataclass(frozen=True)
class ModuleLaunch:
    """``python -m module [arguments]``: how the daemon starts a worker (see the module doc),
    with the variables the worker's own launch command adds to the environment."""

    module: str
    arguments: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None


def module_launch(handle: WorkerHandle, config: WorkerConfig) -> ModuleLaunch:
    """The ``python -m MODULE`` of a worker, read from its launch command (``--config`` and
    its path dropped: the daemon adds its own). A worker launched otherwise cannot be
    started by the daemon: :class:`SubmitError` says so."""
    command = handle.launch_command(Path("config.json"), config, Path("."))
    argv = list(command.argv)
    if len(argv) < 3 or argv[1] != "-m" or "python" not in Path(argv[0]).name:
        raise SubmitError(
            f"worker {handle.name!r} launches as {' '.join(argv[:3])!r}, but the platform's "
            "daemon starts a worker as `python -m MODULE`; make its mosaic_worker_launch_command "
            "return (sys.executable, '-m', MODULE, '--config', config_path)"
        )
    arguments: list[str] = []
    rest = iter(argv[3:])
    for arg in rest:
        if arg == "--config":
            next(rest, None)  # and its path
        elif not arg.startswith("--config="):
            arguments.append(arg)
    return ModuleLaunch(argv[2], tuple(arguments), dict(command.env) or None)


def dispatcher_config(config: Mapping[str, Any], run_id: str, worker_id: str) -> dict[str, Any]:
    """The worker config file the dispatcher writes: ``run_id`` forced, ``worker_id`` added
    when the config has none."""
    payload = {**config, "run_id": run_id}
    if worker_id:
        payload.setdefault("worker_id", worker_id)
    return payload


def dispatcher_argv(
    launch: ModuleLaunch,
    config_path: str | Path,
    worker_id: str,
    grpc_target: str = DEFAULT_DAEMON,
    python: str | None = None,
) -> list[str]:
    """The dispatcher's command for a worker (without its telemetry proxy in front)."""
    argv = [python or sys.executable, "-m", launch.module, *launch.arguments]
    argv += ["--config", str(config_path), "--grpc", "--grpc-target", grpc_target]
    if worker_id:
        argv += ["--worker-id", worker_id]
    return argv


def dispatcher_env(
    base: Mapping[str, str] | None,
    config_path: str | Path,
    worker_id: str,
    environment: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The dispatcher's environment for a worker with no GPU reserved: its own (``base``,
    default ``os.environ``), ``CUDA_VISIBLE_DEVICES`` empty, ``TRAINER_WORKER_CONFIG_PATH``,
    the run's ``environment``, then ``WORKER_ID`` when not set. Nothing else: in particular
    no ``PYTHONUNBUFFERED`` (an inherited one is removed, as the platform's own environment
    has none)."""
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONUNBUFFERED", None)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["TRAINER_WORKER_CONFIG_PATH"] = str(config_path)
    env.update({str(k): str(v) for k, v in (environment or {}).items()})
    if worker_id and not env.get("WORKER_ID"):
        env["WORKER_ID"] = worker_id
    return env


def check_run_name(name: str) -> str:
    """``name`` when the daemon can take it as a run name: 1-120 characters (its schema), none
    a control character, ``/`` or ``\\``, and not ``.`` or ``..`` (the run's
    ``artifacts.output_prefix`` is ``runs/NAME``); :class:`SubmitError` otherwise."""
    bad = (
        not 1 <= len(name) <= RUN_NAME_MAX_LENGTH
        or not name.isprintable()
        or any(c in name for c in "/\\")
        or name in (".", "..")
    )
    if bad:
        shown = repr(name) if len(name) <= 60 else f"{name[:40]!r}... ({len(name):,} characters)"
        raise SubmitError(
            f"--run-name {shown}: give 1-{RUN_NAME_MAX_LENGTH} characters without control "
            "characters, '/' or '\\', not '.' or '..' (the platform names the run's output "
            "directory after it: runs/NAME)"
        )
    return name


def default_run_name(worker: str, run_id: str) -> str:
    """``example-01J...``: a run name the daemon accepts (1-120 characters)."""
    return f"{worker}-{run_id}"[:RUN_NAME_MAX_LENGTH]


def train_run_config(
    *,
    worker: str,
    launch: ModuleLaunch,
    config: Mapping[str, Any],
    run_id: str,
    worker_id: str,
    run_name: str,
    grpc_target: str = DEFAULT_DAEMON,
    python: str | None = None,
    fastlane: bool = False,
) -> dict[str, Any]:
    """The ``TrainRunConfig`` of one run of ``worker``, as the daemon validates it
    (:data:`TRAIN_RUN_SCHEMA`). ``config`` is the worker's flat config; its ``run_id`` is set
    to ``run_id`` (a ULID: the daemon keeps it), its ``worker_id`` to ``worker_id`` unless set.
    ``MOSAIC_RUN_ID`` and ``MOSAIC_RUN_DIR`` are in ``environment`` so that the daemon
    rewrites them to its own run id and run directory.

    ``fastlane`` says whether the worker will publish FastLane frames
    (:func:`publishes_frames`); the metadata says so the way the platform's GUI reads it
    (:func:`fastlane_metadata`)."""
    if not is_ulid(run_id):
        raise SubmitError(f"run id {run_id!r} is not a ULID; the daemon would replace it")
    environment = {
        **{str(k): str(v) for k, v in (launch.env or {}).items()},
        "MOSAIC_RUN_ID": run_id,
        "MOSAIC_RUN_DIR": run_id,
        "MOSAIC_WORKER": worker,
    }
    return {
        "run_name": run_name,
        "entry_point": python or sys.executable,
        "arguments": ["-m", launch.module, *launch.arguments],
        "environment": environment,
        "resources": {
            "cpus": MIN_CPUS,
            "memory_mb": 1024,
            "gpus": {"requested": 0, "mandatory": False},
        },
        "artifacts": {
            "output_prefix": f"runs/{run_name}",
            "persist_logs": True,
            "keep_checkpoints": False,
        },
        "metadata": {
            "ui": {
                "worker_id": worker_id,
                "submitted_by": "mosaic submit",
                "worker": worker,
                **fastlane_metadata(fastlane)["ui"],
            },
            "worker": {
                "worker_id": worker_id,
                "module": launch.module,
                "arguments": list(launch.arguments),
                "use_grpc": True,
                "grpc_target": grpc_target,
                "config": with_fastlane_extras(
                    dispatcher_config(config, run_id, worker_id), fastlane
                ),
            },
        },
    }


#: The config key by which an SDK worker switches FastLane on or off (the example workers'
#: and every worker `mosaic new` bakes); a worker without it follows the environment.
FASTLANE_SWITCH = "fastlane"


def publishes_frames(
    capabilities: WorkerCapabilities, config: Any, environment: Mapping[str, str]
) -> bool:
    """Whether a worker with ``capabilities`` and ``config`` publishes FastLane frames when
    launched with ``environment``: it declares ``supports_fastlane`` and the SDK's one
    decision (:func:`~mosaic_sdk.fastlane.resolve_fastlane`) turns FastLane on for its
    config's switch. Raises ``ValueError`` naming a FastLane variable whose value is wrong."""
    from mosaic_sdk.fastlane.environment import resolve_fastlane

    if not capabilities.supports_fastlane:
        return False
    switch = getattr(config, FASTLANE_SWITCH, None)
    return resolve_fastlane(
        switch if isinstance(switch, bool) else None, environ=environment
    ).enabled


def fastlane_metadata(fastlane: bool) -> dict[str, dict[str, Any]]:
    """What the run's metadata says of FastLane, in the keys the platform's GUI reads
    (``FastLaneTabHandler.metadata_supports_fastlane``): a run that publishes frames has
    ``extras.fastlane_enabled`` in its worker config (and ``ui.fastlane_enabled``, which the
    GUI's XuanCe presenter reads); one that does not has ``ui.fastlane_only`` false, which
    the GUI honours before it guesses from the worker's id or module, so it never opens a
    FastLane tab that would stay empty. (``ui.fastlane_only`` true would also mean "no
    durable telemetry" to the GUI: never sent.)"""
    if fastlane:
        return {"ui": {"fastlane_enabled": True}, "extras": {"fastlane_enabled": True}}
    return {"ui": {"fastlane_only": False}, "extras": {}}


def with_fastlane_extras(config: Mapping[str, Any], fastlane: bool) -> dict[str, Any]:
    """``config`` with :func:`fastlane_metadata`'s extras merged into its own ``extras``."""
    added = fastlane_metadata(fastlane)["extras"]
    if not added:
        return dict(config)
    return {**config, "extras": {**dict(config.get("extras") or {}), **added}}


_WORKER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def worker_id_for(worker: str, given: str | None, config: Mapping[str, Any]) -> str:
    """The worker id of a submission: ``--worker-id``, else the config's, else
    ``<worker>_worker`` (the platform's forms name theirs that way). The daemon names files
    after it (``worker-RUNID-ID.json``, ``ID.stdout.log``): :class:`SubmitError` unless it is
    1-64 letters, digits, ``.``, ``_`` or ``-``."""
    chosen: object = given or config.get("worker_id") or f"{worker}_worker"
    if not isinstance(chosen, str) or not _WORKER_ID.match(chosen):
        raise SubmitError(
            f"worker id {chosen!r}: use 1-64 letters, digits, '.', '_' or '-' (the daemon "
            "names files after it), e.g. --worker-id example-gpu-01"
        )
    return chosen
