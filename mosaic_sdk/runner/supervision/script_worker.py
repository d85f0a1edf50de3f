"""The built-in ``script`` worker, as the runner sees it: its hooks, its handle, and the job of
``mosaic run path/to/train.py -- ARGS`` (or ``--module pkg.train``).

The worker is not an entry point of its own (it would be listed, swept and checked as if it
could run without a script): :func:`script_worker_handle` registers this module's hooks on a
plugin manager with the SDK's own plugins and the installed ``mosaic.plugins`` (observers
hear of a script's run like any other), and the runner launches it like any worker, so the
store, the live view, ``mosaic control`` and ``mosaic watch`` all work. The process it starts
is ``python -m mosaic_sdk.instrument`` in the directory ``mosaic run`` was started in
(:mod:`mosaic_sdk.instrument.script_worker`).

:func:`script_job` checks the script before anything is launched (a script or module that is
not there is :class:`ScriptNotFound`) and records what the run was given: the script's path
and sha256, its arguments, the directory, the Python and key package versions.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import Any

from mosaic_sdk import __version__
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.hookspecs import hookimpl
from mosaic_sdk.instrument.script_config import (
    CAPABILITIES,
    WORKER_TYPE,
    ScriptConfig,
    versions,
)
from mosaic_sdk.plugins import WorkerHandle, create_plugin_manager, load_plugin_group
from mosaic_sdk.runner.reporting import Reporter, current_reporter
from mosaic_sdk.runner.supervision.launch import ResolvedJob

#: The name the hooks are registered under (not ``worker:script``: an installed worker of
#: that name, if any, is left out of this handle's hook calls like every other worker).
PLUGIN_NAME = "worker:mosaic-sdk-script"


class ScriptNotFound(ValueError):
    """The script or module to run is not there (nothing was launched)."""


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    metadata = WorkerMetadata.model_validate(
        {
            "name": "Script",
            "version": __version__,
            "description": "An unchanged Python training script run as a worker "
            "(mosaic run path/to/train.py -- ARGS): its envs, SummaryWriter scalars and "
            "control instrumented from outside",
            "author": "mosaic-worker-sdk developers",
            "upstream_library": "gymnasium",
            "license": "MIT",
        }
    )
    return metadata, CAPABILITIES


@hookimpl
def mosaic_worker_config_model() -> type[WorkerConfig]:
    return ScriptConfig


@hookimpl
def mosaic_worker_launch_command(
    config_path: Path, config: WorkerConfig, run_dir: Path
) -> LaunchCommand:
    cwd = getattr(config, "cwd", None)
    return LaunchCommand(
        argv=(sys.executable, "-m", "mosaic_sdk.instrument", "--config", str(config_path)),
        cwd=cwd,
    )


def script_worker_handle(*, reporter: Reporter | None = None) -> WorkerHandle:
    """A handle of the ``script`` worker on a plugin manager with the SDK's plugins and the
    installed ``mosaic.plugins`` (a broken one is warned about to ``reporter``)."""
    pm = create_plugin_manager()
    _, errors = load_plugin_group(pm)
    for name, err in errors.items():
        (reporter or current_reporter()).warn(
            f"plugin {name!r} ({err.distribution or '?'}) failed to load: {err.error_type}: "
            f"{err.message}; runs go on without it"
        )
    plugin = sys.modules[__name__]
    pm.register(plugin, name=PLUGIN_NAME)
    return WorkerHandle(
        WORKER_TYPE,
        plugin,
        pm,
        distribution="mosaic-worker-sdk",
        dist_version=__version__,
        entry_point=f"{__name__} (built in)",
        style="plugin",
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def find_script(path: str | os.PathLike[str], cwd: Path) -> Path:
    """The script's absolute path; :class:`ScriptNotFound` when it is not a readable file."""
    given = Path(path).expanduser()
    full = given if given.is_absolute() else cwd / given
    if not full.exists():
        raise ScriptNotFound(f"no such script: {path} (looked in {cwd})")
    if not full.is_file():
        raise ScriptNotFound(f"{path} is not a file: give the Python script to run")
    if not os.access(full, os.R_OK):
        raise ScriptNotFound(f"cannot read the script {path}")
    return full.resolve()


def find_module(name: str, cwd: Path, search: Sequence[str] | None = None) -> Path | None:
    """The file ``python -m NAME`` would run from ``cwd`` (a package's ``__main__.py``), found
    without importing anything; :class:`ScriptNotFound` when there is no such module; None
    when it has no file of its own to hash (a namespace package, a frozen module)."""
    paths: list[str] = [str(cwd), *(search if search is not None else sys.path[1:])]
    spec: ModuleSpec | None = None
    locations: Sequence[str] | None = paths
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        raise ScriptNotFound(f"{name!r} is not a module name (e.g. --module pkg.train)")
    for depth, part in enumerate(parts):
        spec = PathFinder.find_spec(part, locations) if locations is not None else None
        if spec is None:
            where = ".".join(parts[:depth]) or f"{cwd} or the Python path"
            raise ScriptNotFound(f"no module named {'.'.join(parts[: depth + 1])} (in {where})")
        locations = spec.submodule_search_locations
    assert spec is not None
    if spec.submodule_search_locations is not None:  # a package: python -m runs __main__
        main = PathFinder.find_spec("__main__", spec.submodule_search_locations)
        if main is None:
            raise ScriptNotFound(f"{name} is a package without __main__.py: give a module to run")
        spec = main
    if spec.origin is None or not Path(spec.origin).is_file():
        return None
    return Path(spec.origin).resolve()


def script_job(
    base: ResolvedJob,
    *,
    script: str | None = None,
    module: str | None = None,
    args: Sequence[str] = (),
    cwd: Path | None = None,
    stop_grace: float | None = None,
) -> ResolvedJob:
    """``base`` (the ``--config``/``--set`` job) with what the run is given and records: the
    script (or module) and its sha256, ``args``, the working directory and the versions."""
    if (script is None) == (module is None):
        raise ValueError("give a script or a module, exactly one")
    where = (cwd or Path.cwd()).absolute()
    fields: dict[str, Any] = {"args": list(args), "cwd": str(where), "environment": versions()}
    if script is not None:
        path = find_script(script, where)
        fields.update(script=str(path), script_sha256=sha256_of(path))
    else:
        assert module is not None
        origin = find_module(module, where)
        fields.update(module=module, script_sha256=sha256_of(origin) if origin else None)
    if stop_grace is not None:
        fields["stop_grace"] = stop_grace
    config: Mapping[str, Any] = {**base.config, **fields}
    return ResolvedJob(dict(config), base.run_id)


__all__ = [
    "PLUGIN_NAME",
    "ScriptNotFound",
    "find_module",
    "find_script",
    "script_job",
    "script_worker_handle",
    "sha256_of",
]
