"""The worker side of the control protocol: a stdin reader thread and one safe point."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from mosaic_sdk.control import dialect
from mosaic_sdk.control.dialect import LineWriter
from mosaic_sdk.control.protocol import (
    INTERACTIVE_COMMANDS,
    Command,
    ProtocolError,
    decode_line,
    error_reply,
    ok_reply,
    parse_command,
)

#: What the interactive queue yields when the channel is woken (a signal) or stdin closed.
WAKE = ("wake", None)
EOF = ("eof", None)


class ControlChannel:
    """One run's control channel.

    ``worker_main`` gives every worker a :class:`ControlChannel` as ``ctx.control`` and starts its
    reader thread on stdin. The worker's loop needs nothing new: ``ctx.cancelled`` (the check it
    already makes every step) is the *safe point*: there the channel

    - blocks while the run is paused (an ``Event`` wait: no CPU), emitting ``paused`` when it
      stops and ``resumed`` when it goes on, from the same step;
    - runs the worker's checkpoint callback (:meth:`ControlChannel.on_checkpoint`) when a
      ``checkpoint`` command asked for one, and replies with the path it saved;
    - returns whether the run must stop (SIGTERM, SIGINT or a ``stop`` command).

    ``ping``, ``pause``, ``resume`` and ``stop`` are answered by the reader thread at once.
    Commands the worker does not claim get ``not_supported`` (``pause`` needs
    ``supports_pause_resume``, ``checkpoint`` needs ``supports_checkpointing`` and a callback);
    interactive commands go to :func:`mosaic_sdk.control.interactive.serve_interactive` when the
    run is in interactive mode and get ``not_interactive`` otherwise. A closed stdin (EOF) ends
    the reader; the run goes on (an interactive session ends as on ``close``).
    """

    def __init__(
        self,
        emitter: LineWriter,
        cancel: threading.Event,
        *,
        capabilities: object = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.emitter = emitter
        self.cancel = cancel
        self.capabilities = capabilities
        self._on_stop = on_stop
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._paused = False
        self._pause_id: str | None = None
        self._parked = False
        self._checkpoints: list[str] = []
        self._checkpoint_fn: Callable[[], str | Path] | None = None
        #: Why ``checkpoint`` is refused while no callback is registered, and what to do.
        self.no_checkpoint: tuple[str, str] = (
            "this worker registered no checkpoint callback",
            "the worker calls ctx.control.on_checkpoint(save) to accept checkpoint",
        )
        #: Interactive mode: (kind, payload) items for serve_interactive, else None.
        self.interactive: queue.Queue[tuple[str, Any]] | None = None
        self.interactive_ended = False
        self.eof = threading.Event()

    @property
    def paused(self) -> bool:
        return self._paused

    def on_checkpoint(self, save: Callable[[], str | Path]) -> None:
        """Register the function that saves a checkpoint now and returns its path (run in
        the loop's thread at its next safe point; the worker claims supports_checkpointing)."""
        self._checkpoint_fn = save

    def safe_point(self) -> bool:
        """Run pending checkpoints, block while paused; True when the run must stop."""
        if not self._paused and not self._checkpoints:
            return self.cancel.is_set()
        parked_at: float | None = None
        while True:
            self._wake.clear()
            self._run_checkpoints()
            if not self._paused or self.cancel.is_set():
                break
            if parked_at is None:
                parked_at = time.monotonic()
                self._parked = True
                self._emit_event("paused", {"command_id": self._pause_id})
            self._wake.wait()
        if parked_at is not None:
            self._parked = False
            self._emit_event("resumed", {"paused_seconds": round(time.monotonic() - parked_at, 6)})
        return self.cancel.is_set()

    def wake(self) -> None:
        """Wake a parked loop or a waiting interactive session (e.g. after a signal)."""
        self._wake.set()
        if self.interactive is not None:
            self.interactive.put(WAKE)

    def start(self, stream: BinaryIO) -> threading.Thread:
        """Read commands from ``stream`` (the worker's stdin) in a daemon thread."""
        thread = threading.Thread(
            target=self._read, args=(stream,), name="mosaic-control", daemon=True
        )
        thread.start()
        return thread

    def _read(self, stream: BinaryIO) -> None:
        try:
            for raw in iter(stream.readline, b""):
                text = raw.decode("utf-8", errors="replace").strip()
                if text:
                    self.handle_line(text)
        except (OSError, ValueError):
            pass  # stdin closed under us: the same as EOF
        finally:
            self.eof.set()
            if self.interactive is not None:
                self.interactive.put(EOF)

    def handle_line(self, text: str) -> None:
        """Answer or forward one command line (never raises)."""
        try:
            data = decode_line(text)
            if "v" not in data:
                dialect.handle_legacy(self, data)
            else:
                self._dispatch(parse_command(data))
        except ProtocolError as exc:
            self.reply(exc.reply())
        except Exception as exc:  # noqa: BLE001 - a reader that dies would drop commands
            self.reply(_failed(None, None, exc))

    def _dispatch(self, command: Command) -> None:
        name, cid = command.cmd, command.id
        if name == "ping":
            self.reply(ok_reply(cid, name, paused=self._paused))
        elif name == "stop":
            self.request_stop()
            self.reply(ok_reply(cid, name, stopping=True))
        elif name in ("pause", "resume"):
            self._pause_or_resume(cid, name)
        elif name == "checkpoint":
            self._check_claim(cid, name, "supports_checkpointing")
            if self._checkpoint_fn is None:
                why, hint = self.no_checkpoint
                raise ProtocolError("not_supported", why, hint, id=cid, cmd=name)
            with self._lock:
                self._checkpoints.append(cid)
            self.wake()
        elif name in INTERACTIVE_COMMANDS:
            if self.interactive is None:
                raise ProtocolError(
                    "not_interactive",
                    f"{name!r} needs a run in interactive mode; this run trains",
                    'start the worker with "mode": "interactive" in its config '
                    "(mosaic play NAME, or mosaic_sdk.runner.start_session(NAME))",
                    id=cid,
                    cmd=name,
                )
            if self.interactive_ended:
                raise _ended(cid, name)
            self.interactive.put(("v1", command))

    def _pause_or_resume(self, cid: str, name: str) -> None:
        self._check_claim(cid, name, "supports_pause_resume")
        if self.interactive is not None:
            why = f"an interactive session steps only when told; {name} has nothing to do"
            raise ProtocolError(
                "not_supported", why, "send step/reset commands, or stop", id=cid, cmd=name
            )
        with self._lock:
            if (name == "pause") == self._paused:
                state = "paused" if self._paused else "running"
                raise ProtocolError(
                    "out_of_order",
                    f"{name} while the run is already {state}",
                    "send pause only to a running run and resume only to a paused one "
                    "(ping tells which)",
                    id=cid,
                    cmd=name,
                )
            self._paused = name == "pause"
            self._pause_id = cid if self._paused else None
        self.wake()
        self.reply(ok_reply(cid, name, paused=self._paused))

    def _check_claim(self, cid: str, name: str, capability: str) -> None:
        caps = self.capabilities
        if caps is not None and not getattr(caps, capability, False):
            raise ProtocolError(
                "not_supported",
                f"this worker does not claim {capability}, so it cannot {name}",
                f"declare {capability}=True in WorkerCapabilities once the worker supports it",
                id=cid,
                cmd=name,
            )

    def request_stop(self) -> None:
        """End the run as SIGTERM does: ``ctx.cancel`` is set and a paused loop wakes."""
        if self._on_stop is not None:
            self._on_stop()
        self.cancel.set()
        self.wake()

    def end_interactive(self) -> None:
        """The interactive session is over: answer what is still queued, and refuse what
        comes later, so that every command still gets its one reply."""
        self.interactive_ended = True
        queued = self.interactive
        while queued is not None and not queued.empty():
            kind, item = queued.get_nowait()
            if kind == "v1":
                self.reply(_ended(item.id, item.cmd).reply())
            elif kind == "legacy":
                dialect.write(self, dialect.error_line("the interactive session has ended"))

    def reply(self, fields: Mapping[str, object]) -> None:
        """Write one control_reply line (dropped when the run's telemetry is closed)."""
        with contextlib.suppress(RuntimeError):
            self.emitter.control_reply(fields)

    def _emit_event(self, event: str, payload: Mapping[str, object]) -> None:
        with contextlib.suppress(RuntimeError):
            self.emitter.lifecycle(event, payload)

    def _run_checkpoints(self) -> None:
        while True:
            with self._lock:
                if not self._checkpoints:
                    return
                cid = self._checkpoints.pop(0)
            assert self._checkpoint_fn is not None
            try:
                path = self._checkpoint_fn()
            except Exception as exc:  # noqa: BLE001 - the reply says what failed
                self.reply(_failed(cid, "checkpoint", exc))
                continue
            self.reply(ok_reply(cid, "checkpoint", checkpoint_path=str(path)))


def _ended(cid: str, cmd: str) -> ProtocolError:
    why = "the interactive session has ended (close, stop or a closed stdin)"
    return ProtocolError("out_of_order", why, "start a new session", id=cid, cmd=cmd)


def _failed(cid: str | None, cmd: str | None, exc: BaseException) -> dict[str, object]:
    hint = "the worker's stderr has the details; the run goes on"
    return error_reply(cid, cmd, "failed", f"{type(exc).__name__}: {exc}", hint)
