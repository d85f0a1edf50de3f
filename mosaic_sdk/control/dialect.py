"""The deployed CleanRL interactive dialect, version "1.0": commands without ``"v"``."""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Mapping
from typing import Any, Protocol


class LineWriter(Protocol):
    """What the control side writes its lines with: a
    :class:`~mosaic_sdk.telemetry.emitter.TelemetryEmitter` (control does not import telemetry:
    telemetry imports the reply model, the one direction between the two)."""

    def control_reply(self, fields: Mapping[str, Any]) -> int: ...

    def lifecycle(self, event: str, payload: Mapping[str, Any] | None = None) -> int: ...

    def write_foreign(self, obj: Mapping[str, Any]) -> None: ...


DIALECT_VERSION = "1.0"
LEGACY_COMMANDS = ("reset", "step", "ping", "stop")


class Channel(Protocol):
    """What the dialect uses of a :class:`~mosaic_sdk.control.channel.ControlChannel`."""

    emitter: LineWriter
    interactive: queue.Queue[tuple[str, Any]] | None
    interactive_ended: bool

    def request_stop(self) -> None: ...


def error_line(message: str) -> dict[str, str]:
    return {"type": "error", "message": message}


def write(channel: Channel, obj: Mapping[str, object]) -> None:
    with contextlib.suppress(RuntimeError):  # the run's output is closed
        channel.emitter.write_foreign(obj)


def handle_legacy(channel: Channel, data: Mapping[str, object]) -> None:
    """A command without ``"v"``: to the interactive session, or answered here."""
    if channel.interactive is not None:
        if channel.interactive_ended:
            write(channel, error_line("the interactive session has ended"))
        else:
            channel.interactive.put(("legacy", data))
        return
    cmd = data.get("cmd")
    if cmd == "ping":
        write(channel, {"type": "pong"})
    elif cmd == "stop":
        channel.request_stop()
        write(channel, {"type": "stopped"})
    elif cmd in LEGACY_COMMANDS:
        write(channel, error_line(f"{cmd!r} needs a run in interactive mode"))
    else:
        write(channel, error_line(f"unknown command {cmd!r}; known: {', '.join(LEGACY_COMMANDS)}"))


def render_payload(frame: Any) -> dict[str, object] | None:
    """The deployed dialect's frame: the whole RGB array as a nested JSON list."""
    if frame is None:
        return None
    height, width = int(frame.shape[0]), int(frame.shape[1])
    return {"mode": "rgb_array", "rgb": frame.tolist(), "width": width, "height": height}
