"""Preparing one launch of a worker: validated config, run directory, command, environment.

Shared by ``mosaic run`` and the conformance suite, so both start workers the same way.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_sdk.contract import LaunchCommand, WorkerConfig, check_run_id, unwrap_job_descriptor
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner import private
from mosaic_sdk.runner.ids import new_run_id
from mosaic_sdk.runner.paths import default_runs_dir


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
    config_data: Mapping[str, Any] | None = None,
    *,
    run_id: str | None = None,
    runs_dir: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    exclusive: bool = False,
) -> PreparedRun:
    """Validate the config, write it with its ``run_id`` into the run directory, and ask the
    worker for its launch command.

    The run id is ``run_id`` if given (it overrides one in the config), else the config's,
    else a new ULID. Raises ``ConfigError`` (a bad config or run id) with readable lines. The
    run directory and ``config.json`` are readable by their owner only; ``exclusive``: a run
    directory that exists already is refused (``FileExistsError``) instead of reused.
    """
    data = unwrap_job_descriptor(config_data or {})
    if run_id is not None:
        try:
            data["run_id"] = check_run_id(run_id)
        except ValueError as exc:
            from mosaic_sdk.contract import ConfigError

            raise ConfigError([str(exc)]) from None
    elif not data.get("run_id"):
        data["run_id"] = new_run_id()
    model = handle.config_model()
    config = model.from_dict(data)
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
    env.update(command.env)
    env.update(
        {
            "MOSAIC_RUN_ID": config.run_id,
            "MOSAIC_RUN_DIR": str(run_dir),
            "MOSAIC_WORKER": handle.name,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return PreparedRun(handle.name, config.run_id, run_dir, config_path, config, command, env)


__all__ = ["PreparedRun", "prepare_run"]
