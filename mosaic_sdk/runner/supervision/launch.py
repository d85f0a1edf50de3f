"""Preparing one launch of a worker: validated config, run directory, command, environment;
:func:`resolve_job` alone reads a job descriptor and decides the run id."""

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
#: sets: ``PYTHONUNBUFFERED=1`` makes lines printed without ``flush`` arrive live, while on the
#: platform they arrive in bursts. A launch ``like_platform`` leaves these out, even when the
#: caller's environment has them (the ``MOSAIC_*`` variables stay: they change nothing about
#: how the interpreter behaves).
RUNNER_ONLY_ENV: Mapping[str, str] = {"PYTHONUNBUFFERED": "1"}


@dataclass(frozen=True)
class ResolvedJob:
    """A worker config (flat, never a descriptor) and its checked run id (also in ``config``)."""

    config: dict[str, Any]
    run_id: str

    def with_run_id(self, run_id: str) -> ResolvedJob:
        """The same config under another (checked) run id."""
        return resolve_job({**self.config, "run_id": None}, run_id=run_id)


def resolve_job(
    config_data: Mapping[str, Any] | ResolvedJob | None = None, *, run_id: str | None = None
) -> ResolvedJob:
    """The worker config (``config_data``: flat, a job descriptor or a :class:`ResolvedJob`)
    and run id of a launch: ``run_id``, else the config's, else a new ULID. A config whose run
    id differs from ``run_id``, or a malformed run id, is a ``ConfigError``."""
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
    """Validate ``job``'s config, write it into a private run directory and ask the worker
    for its launch command; ``ConfigError`` for a bad config, ``FileExistsError`` for an
    existing run directory when ``exclusive``. The environment: the caller's, ``extra_env``,
    the command's ``env``, ``MOSAIC_*`` and :data:`RUNNER_ONLY_ENV` (not if ``like_platform``).
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
    env = {**os.environ, **(extra_env or {})}
    if like_platform:
        for name in RUNNER_ONLY_ENV:
            env.pop(name, None)
    env.update(command.env)
    env.update(MOSAIC_RUN_ID=config.run_id, MOSAIC_RUN_DIR=str(run_dir), MOSAIC_WORKER=handle.name)
    if not like_platform:
        env.update(RUNNER_ONLY_ENV)
    return PreparedRun(handle.name, config.run_id, run_dir, config_path, config, command, env)
