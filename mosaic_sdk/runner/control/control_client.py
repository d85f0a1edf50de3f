"""The client side of a run's control socket (``mosaic control`` and other programs)."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

from mosaic_sdk.runner.control.control_relay import REPLY_TIMEOUT
from mosaic_sdk.runner.control.control_socket import MAX_REQUEST, peer_uid, socket_address

#: Seconds the client waits for the reply: the runner's own wait for the worker, and a margin.
CLIENT_TIMEOUT = REPLY_TIMEOUT + 2.0


class ControlClientError(Exception):
    """The command did not reach the run, or no reply came back."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_socket(path: Path) -> None:
    """Refuse a socket that is missing, not a socket, or not private to this user."""
    path = Path(path)
    me = os.getuid()
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ControlClientError(
            "socket_missing",
            f"no control socket at {path}: the run is not running under a runner of this "
            "version, or its runner was killed before it could start one",
        ) from None
    except PermissionError:
        raise ControlClientError(
            "permission_denied",
            f"cannot look at {path} (permission denied): the run belongs to another user; "
            "run mosaic control as that user",
        ) from None
    if not stat.S_ISSOCK(info.st_mode):
        raise ControlClientError(
            "not_a_socket", f"{path} is not a socket; it was not made by mosaic run"
        )
    owner_dir = os.stat(path.parent).st_uid
    if info.st_uid != me or owner_dir != me:
        raise ControlClientError(
            "wrong_owner",
            f"the control socket {path} belongs to uid {info.st_uid} (its directory to uid "
            f"{owner_dir}), not to you (uid {me}); mosaic control only talks to your own runs",
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ControlClientError(
            "bad_mode",
            f"the control socket {path} is open to other users (mode "
            f"{stat.S_IMODE(info.st_mode):04o}, expected 0600); not trusted. Remove it, or "
            "restart the run",
        )


def send_command(
    path: Path, request: dict[str, Any], timeout: float = CLIENT_TIMEOUT
) -> dict[str, Any]:
    """Send ``request`` through the socket at ``path``; the reply (``ok`` true or false)."""
    path = Path(path)
    check_socket(path)
    line = json.dumps(request, separators=(",", ":")).encode("utf-8") + b"\n"
    if len(line) > MAX_REQUEST:
        raise ControlClientError("malformed_request", f"the request is over {MAX_REQUEST} bytes")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            with socket_address(path) as address:
                sock.connect(address)
        except ConnectionRefusedError:
            raise ControlClientError(
                "refused",
                f"nobody listens on {path}: the runner of this run is gone (killed?); "
                "`mosaic runs show` tells what the store knows",
            ) from None
        except PermissionError:
            raise ControlClientError(
                "permission_denied", f"permission denied connecting to {path}"
            ) from None
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            raise ControlClientError(
                "wrong_owner",
                f"the process behind {path} runs as uid {uid}, not as you ({os.getuid()}); "
                "not trusted",
            )
        data = b""
        try:
            sock.sendall(line)
            while b"\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            raise ControlClientError(
                "timeout", f"no reply from the run within {timeout:g} s"
            ) from None
        except OSError as exc:
            raise ControlClientError(
                "connection_lost", f"the connection to {path} broke: {exc}"
            ) from None
    finally:
        sock.close()
    try:
        reply = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        reply = None
    if not isinstance(reply, dict) and data.strip():
        raise ControlClientError(
            "bad_reply",
            f"the process behind {path} replied with something that is not a JSON object "
            f"({data[:200]!r}); is it a mosaic run of this version?",
        )
    if not isinstance(reply, dict):
        raise ControlClientError(
            "connection_lost",
            f"the run closed the connection without a reply ({len(data)} bytes came back)",
        )
    return reply
