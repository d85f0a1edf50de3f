"""Starting a control :class:`~mosaic_sdk.control.session.Session` on an installed worker
(``mosaic play``), prepared and supervised as ``mosaic run`` does, with the config's ``mode`` set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from mosaic_sdk.control.session import DEFAULT_TIMEOUT, START_TIMEOUT, Session
from mosaic_sdk.fastlane.environment import (
    apply_fastlane_environment,
    read_fastlane_environment,
)
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.reporting import Reporter
from mosaic_sdk.runner.storage import private
from mosaic_sdk.runner.supervision.launch import PreparedRun, prepare_run, resolve_job
from mosaic_sdk.runner.supervision.resolve import resolve_worker
from mosaic_sdk.runner.supervision.session_lifecycle import launch_session


class SessionLaunchError(ValueError):
    """The worker cannot be driven by a control session (message says why and what to do)."""


def prepare_session(
    worker: str,
    config: Mapping[str, object] | None = None,
    *,
    mode: str = "interactive",
    runs_dir: Path | None = None,
    reporter: Reporter | None = None,
) -> PreparedRun:
    """Resolve ``worker`` (as ``mosaic run`` does: an unknown worker or one of another worker
    protocol version is a :class:`~mosaic_sdk.plugins.PluginError`), check it claims the
    control protocol, and prepare its run."""
    return _prepare(worker, config, mode=mode, runs_dir=runs_dir, reporter=reporter)[1]


def _prepare(
    worker: str,
    config: Mapping[str, object] | None,
    *,
    mode: str,
    runs_dir: Path | None,
    reporter: Reporter | None = None,
) -> tuple[WorkerHandle, PreparedRun]:
    handle = resolve_worker(worker, reporter=reporter)
    _, capabilities = handle.describe()
    if not capabilities.control_protocol:
        raise SessionLaunchError(
            f"worker {worker!r} does not speak the control protocol "
            "(its capabilities have no control_protocol); a session cannot drive it"
        )
    model = handle.config_model()
    data = dict(config or {})
    if "mode" not in model.model_fields:
        if mode != "train":
            raise SessionLaunchError(
                f"worker {worker!r} has no 'mode' in its config, so no {mode} mode; "
                "start it with mode='train'"
            )
    else:
        data["mode"] = mode
    return handle, prepare_run(handle, resolve_job(data), runs_dir=runs_dir)


def start_session(
    worker: str,
    config: Mapping[str, Any] | None = None,
    *,
    mode: str = "interactive",
    runs_dir: Path | None = None,
    fastlane: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    start_timeout: float = START_TIMEOUT,
    echo_stderr: IO[str] | None = None,
    reporter: Reporter | None = None,
) -> Session:
    """Launch the installed worker ``worker`` with ``config`` in ``mode`` under the run
    lifecycle, wait for its first line and return the :class:`~mosaic_sdk.control.session.Session`
    that drives it (its stderr is kept in ``stderr.log``; ``echo_stderr`` gets it too). Ending
    the session stops the worker's whole process tree (SIGTERM, SIGKILL ``timeout`` s later).

    Raises ``PluginError`` as ``mosaic run`` does, :class:`SessionLaunchError` for a worker
    without the control protocol (or the mode) or that cannot start, ``ControlTimeout`` when
    its first line does not come in ``start_timeout`` s."""
    handle, prepared = _prepare(worker, config, mode=mode, runs_dir=runs_dir, reporter=reporter)
    if fastlane:
        prepared = dataclasses.replace(prepared, env=fastlane_environment(prepared.env))
    stderr_path = prepared.run_dir / "stderr.log"
    private.create_file(stderr_path)
    try:
        session = launch_session(
            handle,
            prepared,
            timeout=timeout,
            stderr_path=stderr_path,
            on_stderr_lines=None if echo_stderr is None else _echo(echo_stderr),
        )
    except RuntimeError as exc:
        raise SessionLaunchError(
            f"{exc}; check the worker's launch command (mosaic workers show {worker})"
        ) from None
    try:
        first = "init" if mode == "interactive" else "run_started"
        session.wait_for(
            lambda line: line.get("type") == first or line.get("event") == first,
            timeout=start_timeout,
            what=f"the worker's {first} line",
        )
    except BaseException:
        session.kill()
        raise
    return session


def fastlane_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with FastLane switched on (:func:`~mosaic_sdk.fastlane.apply_fastlane_environment`),
    keeping the settings ``env`` already has (a video mode of ``off`` stays off)."""
    try:
        current = read_fastlane_environment(env)
    except ValueError as exc:
        raise SessionLaunchError(f"cannot switch FastLane on: {exc}") from None
    out = dict(env)
    apply_fastlane_environment(
        out,
        fastlane_only=current.fastlane_only,
        fastlane_slot=current.slot,
        video_mode=current.video_mode,
        grid_limit=current.grid_limit,
    )
    return out


def _echo(stream: IO[str]) -> Any:
    def echo(lines: list[bytes], partial: bool) -> None:
        for raw in lines:
            stream.write(raw.decode("utf-8", "replace") + "\n")
        stream.flush()

    return echo
