"""The run page's pause/resume/stop buttons, sent through the runner's control client."""

from __future__ import annotations

from pathlib import Path

from starlette.concurrency import run_in_threadpool

from mosaic_sdk.control.protocol import SOCKET_NAME
from mosaic_sdk.runner.control.control_client import CLIENT_TIMEOUT, ControlClientError
from mosaic_sdk.runner.control.control_client import send_command as send_to_socket

#: The commands the run page's buttons send.
COMMANDS = ("pause", "resume", "stop")


def refusal(code: str, message: str, hint: str = "") -> dict[str, object]:
    """A ``control_reply`` with ``ok`` false, as the page shows a refused command."""
    return {
        "type": "control_reply",
        "ok": False,
        "error": {"code": code, "message": message, "hint": hint},
    }


async def send_command(
    run_dir: str | Path | None, cmd: str, timeout: float = CLIENT_TIMEOUT
) -> dict[str, object]:
    """Send ``cmd`` to the run whose directory is ``run_dir``; the reply as a dict.

    Never raises for a run that cannot be reached: the reply says why (``ok`` false, with the
    runner client's :attr:`~mosaic_sdk.runner.control.control_client.ControlClientError.code`)."""
    if cmd not in COMMANDS:
        return refusal(
            "unknown_command", f"{cmd!r} is not a control command", f"use one of {COMMANDS}"
        )
    if not run_dir:
        return refusal("no_run_dir", "the run has no run directory", "start it with mosaic run")
    path = Path(run_dir) / SOCKET_NAME
    try:
        return await run_in_threadpool(send_to_socket, path, {"cmd": cmd}, timeout)
    except ControlClientError as exc:
        return refusal(exc.code, str(exc), "the run may have ended; reload the page")
    except OSError as exc:  # e.g. the run directory went away while connecting
        return refusal("unreachable", f"cannot reach the run's control socket {path}: {exc}")


__all__ = ["COMMANDS", "refusal", "send_command"]
