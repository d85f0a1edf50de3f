"""Preparing the launch of a control :class:`~mosaic_sdk.control.session.Session`.

:func:`start_session` (and ``mosaic play``) start a worker the way
``mosaic run`` does: the same job resolution, run directory and launch command
(:func:`~mosaic_sdk.runner.launch.prepare_run`), with the config's ``mode`` set. A worker
that does not speak the control protocol is refused with a clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mosaic_sdk.control.session import DEFAULT_TIMEOUT, START_TIMEOUT, Session
from mosaic_sdk.runner.launch import PreparedRun, prepare_run, resolve_job


class SessionLaunchError(ValueError):
    """The worker cannot be driven by a control session (message says why and what to do)."""


def prepare_session(
    worker: str,
    config: Mapping[str, Any] | None = None,
    *,
    mode: str = "interactive",
    runs_dir: Path | None = None,
) -> PreparedRun:
    """Resolve ``worker``, check it claims the control protocol, and prepare its run."""
    from mosaic_sdk.plugins import load_worker

    handle = load_worker(worker)
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
    return prepare_run(handle, resolve_job(data), runs_dir=runs_dir)


def start_session(
    worker: str,
    config: Mapping[str, Any] | None = None,
    *,
    mode: str = "interactive",
    runs_dir: Path | None = None,
    fastlane: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    start_timeout: float = START_TIMEOUT,
) -> Session:
    """Launch the installed worker ``worker`` with ``config`` in ``mode`` and wait for its
    first line; the :class:`~mosaic_sdk.control.session.Session` that drives it.
    ``fastlane`` switches FastLane on (``MOSAIC_FASTLANE=1``). Raises
    :class:`SessionLaunchError` for a worker without the control protocol (or without the
    mode), ``ControlTimeout`` when its first line does not come in ``start_timeout`` s."""
    prepared = prepare_session(worker, config, mode=mode, runs_dir=runs_dir)
    env = dict(prepared.env)
    if fastlane:
        env["MOSAIC_FASTLANE"] = "1"
    session = Session.launch(
        prepared.argv,
        env=env,
        cwd=prepared.cwd,
        timeout=timeout,
        run_id=prepared.run_id,
        run_dir=prepared.run_dir,
    )
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


__all__ = ["SessionLaunchError", "prepare_session", "start_session"]
