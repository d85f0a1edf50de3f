"""The per-run control socket: ``control.sock`` in the run's directory."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import stat
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mosaic_sdk.control.protocol import SOCKET_NAME
from mosaic_sdk.runner.control.control_relay import ControlRelay, runner_error
from mosaic_sdk.runner.reporting import current_reporter

#: The longest request line read (bytes).
MAX_REQUEST = 1 << 16
#: Seconds a client may take to send its request line.
REQUEST_TIMEOUT = 5.0
#: Connections served at once.
MAX_CLIENTS = 16
_MAX_UNIX_PATH = 100


class ControlSocketError(OSError):
    """The control socket cannot be made or reached; the message says why and what to do."""


@contextlib.contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address for ``path`` short enough for ``bind``/``connect`` (Unix socket paths are
    limited to about 100 bytes; a longer one is reached through ``/proc/self/fd``, Linux)."""
    raw = os.fsencode(path)
    if len(raw) <= _MAX_UNIX_PATH:
        yield str(path)
        return
    if not os.path.isdir("/proc/self/fd"):
        raise ControlSocketError(
            f"the control socket path {path} is longer than a Unix socket allows "
            f"({len(raw)} bytes); use a shorter --store or --runs-dir"
        )
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of ``sock`` (None where the OS cannot tell)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _check_dir(run_dir: Path) -> None:
    info = os.stat(run_dir)
    if info.st_uid != os.getuid():
        raise ControlSocketError(
            f"the run directory {run_dir} belongs to uid {info.st_uid}, not to this user "
            f"({os.getuid()}); no control socket is made there"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(run_dir, 0o700)  # ours: only the owner may reach the socket


class ControlServer:
    """Serves one run's control socket to the run's owner only (a ``0600`` socket in a
    ``0700`` directory; another user, root included, gets ``permission_denied``): one JSON
    request line in, one reply line out, a thread per client (past :data:`MAX_CLIENTS`:
    ``busy``)."""

    def __init__(self, run_dir: Path, relay: ControlRelay) -> None:
        self.path = Path(run_dir) / SOCKET_NAME
        self.relay = relay
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self._closed = False
        _check_dir(Path(run_dir))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with socket_address(self.path) as address:
                sock.bind(address)
            os.chmod(self.path, 0o600)  # the directory (0700) guards it until here
            sock.listen(MAX_CLIENTS)
        except OSError as exc:
            sock.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            raise ControlSocketError(f"cannot make the control socket {self.path}: {exc}") from exc
        self._ino = os.stat(self.path).st_ino
        self._sock = sock
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="control-socket", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self._sock.fileno(), select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._closed:
            ready = {fd for fd, _ in poller.poll()}
            if self._wake_r in ready or self._closed:
                return
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            if not self._slots.acquire(blocking=False):
                self._answer(
                    conn,
                    runner_error(
                        "busy",
                        f"{MAX_CLIENTS} commands are waiting for the worker already",
                        "wait for their replies, then send again",
                    ),
                )
                continue
            threading.Thread(
                target=self._client, args=(conn,), name="control-client", daemon=True
            ).start()

    def _client(self, conn: socket.socket) -> None:
        try:
            uid = peer_uid(conn)
            if uid is not None and uid != os.getuid():
                self._answer(
                    conn,
                    runner_error(
                        "permission_denied",
                        f"uid {uid} may not control this run (it belongs to uid {os.getuid()})",
                        "run `mosaic control` as the user who started the run",
                    ),
                )
                return
            self._answer(conn, self._reply(conn))
        finally:
            self._slots.release()

    def _reply(self, conn: socket.socket) -> dict[str, Any]:
        """The reply to the client's request line (a runner_error when there is none)."""
        conn.settimeout(REQUEST_TIMEOUT)
        data = b""
        try:
            while b"\n" not in data and len(data) <= MAX_REQUEST:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (TimeoutError, OSError) as exc:
            return runner_error(
                "malformed_request",
                f"no complete request line arrived ({type(exc).__name__})",
                'send one JSON object and a newline, e.g. {"cmd": "ping"}',
            )
        line = data.split(b"\n", 1)[0]
        if len(line) > MAX_REQUEST:
            return runner_error(
                "malformed_request",
                f"the request line is longer than {MAX_REQUEST} bytes",
                'send a short JSON object, e.g. {"cmd": "ping"}',
            )
        try:
            request = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return runner_error(
                "malformed_request",
                f"the request is not JSON ({exc})",
                'send one JSON object and a newline, e.g. {"cmd": "ping"}',
            )
        return self.relay.request(request)

    @staticmethod
    def _answer(conn: socket.socket, reply: dict[str, Any]) -> None:
        try:
            conn.sendall(json.dumps(reply, separators=(",", ":"), default=str).encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
            # Read what the client still sends (an over-long request) before closing: closing
            # with unread bytes would reset the connection and the client lose the reply.
            conn.settimeout(0.5)
            for _ in range(64):
                if not conn.recv(1 << 16):
                    break
        except OSError:  # the client went away: nothing to tell it
            pass
        finally:
            conn.close()

    def close(self) -> None:
        """Stop serving and remove the socket (if it is still the one this server made)."""
        if self._closed:
            return
        self._closed = True
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=2)
        self._sock.close()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._ino:
                os.unlink(self.path)


def start_server(
    run_dir: Path, relay: ControlRelay, warn: Callable[[str], None] | None = None
) -> ControlServer | None:
    """A server for ``run_dir``, or None (told to ``warn``, default: the process's reporter)
    when none can be made: the run goes on without one."""
    try:
        return ControlServer(run_dir, relay)
    except OSError as exc:
        (warn or current_reporter().warn)(f"no control socket for this run: {exc}")
        return None
