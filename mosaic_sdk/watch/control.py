"""Sending pause/resume/stop to a run through its control socket.

The runner listens on ``control.sock`` in the run's directory: a client writes one JSON line
``{"cmd": "pause"}`` and reads one JSON line back, a ``control_reply`` (``ok`` true, or false
with ``error.code``/``message``/``hint``). This module is that client, for the run page's
buttons; the page only shows them when the socket exists.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mosaic_sdk.watch.data import CONTROL_SOCKET

#: The commands the run page's buttons send.
COMMANDS = ("pause", "resume", "stop")
#: Seconds to wait for the reply (the runner itself gives up on the worker after 5 s).
REPLY_TIMEOUT = 7.0
_MAX_REPLY = 1 << 20


def _refusal(code: str, message: str, hint: str) -> dict[str, Any]:
    return {
        "type": "control_reply",
        "ok": False,
        "error": {"code": code, "message": message, "hint": hint},
    }


async def send_command(
    run_dir: str | Path | None, cmd: str, timeout: float = REPLY_TIMEOUT
) -> dict[str, Any]:
    """Send ``cmd`` to the run whose directory is ``run_dir``; the reply as a dict.

    Never raises for a run that cannot be reached: the reply says why (``ok`` false)."""
    if cmd not in COMMANDS:
        return _refusal(
            "unknown_command", f"{cmd!r} is not a control command", f"use one of {COMMANDS}"
        )
    if not run_dir:
        return _refusal("no_run_dir", "the run has no run directory", "start it with mosaic run")
    path = Path(run_dir) / CONTROL_SOCKET
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(path), limit=_MAX_REPLY), timeout
        )
    except (OSError, asyncio.TimeoutError) as exc:
        return _refusal(
            "unreachable",
            f"cannot connect to the run's control socket {path}: {exc}",
            "the run may have ended; reload the page",
        )
    try:
        writer.write(json.dumps({"cmd": cmd}).encode() + b"\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
    except (OSError, ValueError, asyncio.TimeoutError) as exc:
        return _refusal(
            "no_reply",
            f"the run's control socket gave no reply line within {timeout:.0f} s ({exc!r})",
            "the runner may be busy or gone; try again",
        )
    finally:
        writer.close()
    try:
        reply = json.loads(line)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        return _refusal(
            "bad_reply",
            f"the run's control socket replied with something that is not a JSON object: "
            f"{line[:200]!r}",
            "is the runner speaking the control protocol?",
        )
    return reply


__all__ = ["COMMANDS", "REPLY_TIMEOUT", "send_command"]
