"""Preparing one launch of a worker: validated config, run directory, command, environment.

Shared by ``mosaic run`` and the conformance suite, so both start workers the same way.

:func:`resolve_job` is the one place on the launch path that reads a job descriptor
(``metadata.worker.config``) and decides the run id; everything after it (the store,
:func:`prepare_run`, the worker's config file) takes the :class:`ResolvedJob` it returns.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_sdk.contract import (
    ConfigError,
    LaunchCommand,
    WorkerConfig,
    agent_stream_clash,
    check_run_id,
    unwrap_job_descriptor,
)
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.storage import private
from mosaic_sdk.runner.storage.ids import new_run_id
from mosaic_sdk.runner.storage.paths import default_runs_dir

#: What ``mosaic run`` adds to every worker's environment that the platform's dispatcher never
#: sets (it copies its own environment and adds only its variables). ``PYTHONUNBUFFERED=1``
#: makes a Python worker's stdout unbuffered, so lines printed without ``flush`` still arrive
#: live under ``mosaic run``, while on the platform they sit in an 8 KiB block buffer and
#: arrive in bursts or at exit. A launch ``like_platform`` leaves these out, even when the
#: caller's own environment has them. (The runner's ``MOSAIC_RUN_ID``, ``MOSAIC_RUN_DIR`` and
#: ``MOSAIC_WORKER`` stay: they tell a worker where its run lives and change nothing about how
#: its interpreter behaves; ``PYTHONIOENCODING`` and ``PYTHONUTF8`` are never set by the
#: runner, and an inherited value is inherited on the platform too.)
RUNNER_ONLY_ENV: Mapping[str, str] = {"PYTHONUNBUFFERED": "1"}


@dataclass(frozen=True)
class ResolvedJob:
    """A worker config (flat, never a descriptor) and its checked run id (also in ``config``)."""

    config: dict[str, Any]
    run_id: str

    def with_run_id(self, run_id: str) -> ResolvedJob:
        """The same config under another (checked) run id: for callers that give every launch
        an id of their own, as the conformance suite does."""
        return resolve_job({**self.config, "run_id": None}, run_id=run_id)


def resolve_job(
    config_data: Mapping[str, Any] | ResolvedJob | None = None, *, run_id: str | None = None
) -> ResolvedJob:
    """The worker config and run id of a launch, decided once.

    ``config_data`` is a flat config or a job descriptor. The run id is ``run_id`` when given,
    else the config's, else a new ULID. A config whose run id differs from ``run_id`` is
    refused, as is a malformed run id (``ConfigError``, one line naming both). A
    :class:`ResolvedJob` passes through (checked against ``run_id`` the same way).
    """
    if isinstance(config_data, ResolvedJob):
        data = dict(config_data.config)
    else:
        data = unwrap_job_descriptor(config_data or {})
    given = data.get("run_id")
    if run_id is not None and given not in (None, "") and given != run_id:
        raise ConfigError(
            [
                f"run_id: the config says {given!r} but the run id given is {run_id!r}; "
                "drop one of them (e.g. the config's run_id) or make them the same"
            ]
        )
    chosen = run_id if run_id is not None else given or new_run_id()
    try:
        data["run_id"] = check_run_id(chosen)
    except ValueError as exc:
        raise ConfigError([str(exc)]) from None
    clash = agent_stream_clash(data["run_id"])
    if clash is not None:
        raise ConfigError([clash])
    return ResolvedJob(data, data["run_id"])


@dataclass(frozen=True)
class PreparedRun:
    """Everything needed to start the worker process of one run."""

    worker: str
    run_id: str
    run_dir: Path
    config_path: Path
    config: WorkerConfig
    command: LaunchCommand
    env: dict[str, str]

    @property
    def argv(self) -> list[str]:
        return list(self.command.argv)

    @property
    def cwd(self) -> str | None:
        return self.command.cwd


def prepare_run(
    handle: WorkerHandle,
    job: ResolvedJob,
    *,
    runs_dir: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    exclusive: bool = False,
    like_platform: bool = False,
) -> PreparedRun:
    """Validate the config of ``job`` (see :func:`resolve_job`), write it into the run
    directory, and ask the worker for its launch command.

    Raises ``ConfigError`` (a bad config) with readable lines. The run directory and
    ``config.json`` are readable by their owner only; ``exclusive``: a run
    directory that exists already is refused (``FileExistsError``) instead of reused.

    The environment is the caller's, then ``extra_env``, then the launch command's ``env``,
    then the run's ``MOSAIC_*`` variables and :data:`RUNNER_ONLY_ENV`. ``like_platform``
    (the conformance suite) launches the way the platform's dispatcher does: without the
    variables of :data:`RUNNER_ONLY_ENV`, inherited or given in ``extra_env``; a variable the
    worker's own launch command sets is kept.
    """
    if not isinstance(job, ResolvedJob):
        raise TypeError("prepare_run takes the ResolvedJob of resolve_job(config, run_id=...)")
    model = handle.config_model()
    config = model.from_dict(job.config)
    run_dir = (runs_dir or default_runs_dir()).absolute() / config.run_id
    try:
        private.make_dir(run_dir, exclusive=exclusive)
    except FileExistsError:
        raise FileExistsError(
            f"the run directory {run_dir} exists already (a run {config.run_id} of another "
            "store?); pick another --run-id, or another --runs-dir"
        ) from None
    config_path = run_dir / "config.json"
    try:
        private.write_text(
            config_path, json.dumps(config.to_dict(), indent=2, sort_keys=True) + "\n"
        )
        command = handle.launch_command(config_path, config, run_dir)
    except BaseException:
        if exclusive:  # the directory is this call's own: leave no half-made run behind
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    env = dict(os.environ)
    env.update(extra_env or {})
    if like_platform:
        for name in RUNNER_ONLY_ENV:
            env.pop(name, None)
    env.update(command.env)
    env.update(
        {
            "MOSAIC_RUN_ID": config.run_id,
            "MOSAIC_RUN_DIR": str(run_dir),
            "MOSAIC_WORKER": handle.name,
        }
    )
    if not like_platform:
        env.update(RUNNER_ONLY_ENV)
    return PreparedRun(handle.name, config.run_id, run_dir, config_path, config, command, env)


__all__ = ["RUNNER_ONLY_ENV", "PreparedRun", "ResolvedJob", "prepare_run", "resolve_job"]
