"""Preparing the launch of a control :class:`~mosaic_sdk.control.session.Session`.

``Session.start(worker, config, mode=...)`` (and ``mosaic play``) start a worker the way
``mosaic run`` does: the same job resolution, run directory and launch command
(:func:`~mosaic_sdk.runner.launch.prepare_run`), with the config's ``mode`` set. A worker
that does not speak the control protocol is refused with a clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


__all__ = ["SessionLaunchError", "prepare_session"]
