"""Commands to a running worker and its replies: the runner's half of the control protocol."""

from __future__ import annotations

import functools
import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

from mosaic_sdk.control.protocol import COMMANDS
from mosaic_sdk.runner.supervision.stdin import StdinClosed, WorkerStdin
from mosaic_sdk.telemetry.encoding import lone_surrogate_at

#: The control protocol version this runner speaks.
PROTOCOL = 1
#: Seconds to wait for the worker's reply to one command.
REPLY_TIMEOUT = 5.0
#: The longest client-chosen id.
MAX_ID = 128
#: Codes of the replies the runner makes itself.
ERROR_CODES = (
    "malformed_request",
    "unknown_command",
    "duplicate_id",
    "no_protocol",
    "unsupported_protocol",
    "run_not_running",
    "stdin_closed",
    "timeout",
    "permission_denied",
    "busy",
)


def runner_error(
    code: str, message: str, hint: str, *, cmd: object = None, id: object = None
) -> dict[str, object]:
    """A reply made by the runner (the worker never saw the command, or did not answer)."""
    return {
        "type": "control_reply",
        "v": PROTOCOL,
        "id": id if isinstance(id, str) else None,
        "cmd": cmd if isinstance(cmd, str) else None,
        "ok": False,
        "source": "runner",
        "error": {"code": code, "message": message, "hint": hint},
    }


class _Pending:
    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None


class ControlRelay:
    """One run's command channel, shared by the control socket and the live view's keys
    (thread-safe). :meth:`request` writes a checked request to the worker's stdin and waits up
    to :data:`REPLY_TIMEOUT` s for the ``control_reply`` with its id (:meth:`on_reply`); the
    caller always gets one reply: the worker's, or a :func:`runner_error`."""

    def __init__(
        self,
        worker: str,
        protocol: int | None,
        *,
        reply_timeout: float = REPLY_TIMEOUT,
        stop_without_protocol: Callable[[str], None] | None = None,
    ) -> None:
        self.worker = worker
        self.protocol = protocol
        self.reply_timeout = reply_timeout
        #: How the run stops a worker that reads no commands (None: ``stop`` is refused).
        self.stop_without_protocol = stop_without_protocol
        self._stdin: WorkerStdin | None = None
        self._ended: str | None = None
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def attach(self, stdin: WorkerStdin) -> None:
        """The worker started: commands go to ``stdin`` from now on."""
        self._stdin = stdin

    def end(self, why: str) -> None:
        """The run is over: waiting requests and later ones get ``run_not_running`` (``why``)."""
        with self._lock:
            self._ended = why
            pending, self._pending = self._pending, {}
        for pid, slot in pending.items():
            slot.reply = self._not_running(None, pid)
            slot.done.set()

    def on_reply(self, reply: dict[str, Any]) -> None:
        """A ``control_reply`` line the worker wrote (called by the ingest, any thread)."""
        rid = reply.get("id")
        if not isinstance(rid, str):
            return
        with self._lock:
            slot = self._pending.pop(rid, None)
        if slot is not None:
            slot.reply = reply
            slot.done.set()

    def request(self, request: Any, timeout: float | None = None) -> dict[str, Any]:
        """Send one command and return its reply (the worker's, or the runner's error)."""
        problem = self._check(request)
        if problem is not None:
            return problem
        cmd, rid = request["cmd"], request.get("id")
        fail = functools.partial(runner_error, cmd=cmd, id=rid)
        if self._ended is not None:
            return self._not_running(cmd, rid)
        if self.protocol != PROTOCOL and cmd == "stop" and self.stop_without_protocol is not None:
            # stop always works: a worker that reads no commands, or speaks another protocol
            # (0, 2...), is stopped the runner's way
            why = (
                "reads no commands"
                if self.protocol is None
                else f"speaks control protocol {self.protocol!r}, not {PROTOCOL}"
            )
            self.stop_without_protocol(
                f"stop through the control socket (the worker {why}: SIGTERM)"
            )
            reply = {"type": "control_reply", "v": PROTOCOL, "id": rid, "cmd": cmd, "ok": True}
            return {**reply, "source": "runner", "via": "SIGTERM"}
        if self.protocol is None:
            return fail(
                "no_protocol",
                f"worker {self.worker!r} does not claim the control protocol "
                "(control_protocol is not set in its capabilities), so it reads no commands",
                "only stop works for it (the runner sends SIGTERM); a worker built on "
                "mosaic_sdk's worker_main claims the protocol with control_protocol=1",
            )
        if self.protocol != PROTOCOL:
            return fail(
                "unsupported_protocol",
                f"worker {self.worker!r} speaks control protocol {self.protocol}, this runner "
                f"speaks {PROTOCOL}",
                "install a mosaic-worker-sdk and a worker made for the same protocol; stop "
                "works for it (the runner sends SIGTERM)",
            )
        slot = _Pending()
        with self._lock:
            if rid is None:
                rid = f"mosaic-{next(self._ids)}"
                while rid in self._pending:  # a client chose this form itself
                    rid = f"mosaic-{next(self._ids)}"
            elif rid in self._pending:
                return fail(
                    "duplicate_id",
                    f"a command with id {rid!r} is still waiting for its reply",
                    "give every command an id of its own, or leave the id out",
                )
            self._pending[rid] = slot
        line = {k: v for k, v in request.items() if k not in ("v", "id", "cmd")}
        wire = json.dumps({"v": PROTOCOL, "id": rid, "cmd": cmd, **line}, separators=(",", ":"))
        stdin = self._stdin
        try:
            if stdin is None:
                raise StdinClosed("the worker has not started yet")
            stdin.write_line(wire.encode("utf-8"))
        except StdinClosed as exc:
            self._forget(rid)
            return runner_error(
                "stdin_closed",
                f"cannot send {cmd!r} to the worker: {exc}",
                "the worker takes no more commands; `mosaic runs show` tells how the run ends",
                cmd=cmd,
                id=rid,  # the id sent: the caller's, or the one given here
            )
        wait = self.reply_timeout if timeout is None else timeout
        if slot.done.wait(wait) and slot.reply is not None:
            return slot.reply
        self._forget(rid)
        if slot.reply is not None:  # came in just now
            return slot.reply
        return runner_error(
            "timeout",
            f"the worker did not answer {cmd!r} (id {rid}) within {wait:g} s; the command was "
            "sent, the run goes on",
            "the worker may be busy (a long step or a checkpoint being written) or not reading "
            "its stdin; try again, or see the run's output with `mosaic runs show`",
            cmd=cmd,
            id=rid,
        )

    def _forget(self, rid: str) -> None:
        with self._lock:
            self._pending.pop(rid, None)

    def _not_running(self, cmd: object, rid: object) -> dict[str, object]:
        return runner_error(
            "run_not_running",
            f"the run is not running any more ({self._ended})",
            "commands reach running runs only; `mosaic runs show RUN` tells how it ended",
            cmd=cmd,
            id=rid,
        )

    @staticmethod
    def _check(request: object) -> dict[str, object] | None:
        """A runner_error for a malformed request or an unknown command, else None."""
        if not isinstance(request, dict):
            return runner_error(
                "malformed_request",
                f"a request is one JSON object, got {type(request).__name__}",
                'send one line such as {"cmd": "ping"}',
            )
        cmd, rid = request.get("cmd"), request.get("id")
        if not isinstance(cmd, str) or not cmd:
            return runner_error(
                "malformed_request",
                'the request has no "cmd" string',
                f'send one line such as {{"cmd": "ping"}}; commands: {", ".join(COMMANDS)}',
                id=rid,
            )
        if rid is not None and (not isinstance(rid, str) or not 0 < len(rid) <= MAX_ID):
            return runner_error(
                "malformed_request",
                f'"id" must be a string of 1 to {MAX_ID} characters, got {rid!r:.60}',
                "leave the id out (the runner assigns one) or give a short string",
                cmd=cmd,
            )
        where = lone_surrogate_at(request)
        if where is not None:
            return runner_error(
                "malformed_request",
                f"the request's text at {where} is not valid Unicode (it holds a lone "
                "surrogate, e.g. from a \\ud800 escape); it was not sent to the worker",
                "send ids and values as UTF-8 text; a name read from a non-UTF-8 disk should "
                "be decoded before it is sent",
                cmd=cmd if lone_surrogate_at(cmd) is None else None,
                id=rid if lone_surrogate_at(rid) is None else None,
            )
        if request.get("v", PROTOCOL) != PROTOCOL:
            return runner_error(
                "malformed_request",
                f'"v" is {request.get("v")!r:.20}; this runner speaks control protocol {PROTOCOL}',
                'leave "v" out (the runner adds it)',
                cmd=cmd,
                id=rid,
            )
        if cmd not in COMMANDS:
            return runner_error(
                "unknown_command",
                f"unknown command {cmd!r:.60}",
                f"commands: {', '.join(COMMANDS)}",
                cmd=cmd,
                id=rid,
            )
        return None
