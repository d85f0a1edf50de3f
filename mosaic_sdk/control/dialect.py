"""The deployed CleanRL interactive dialect, version "1.0": commands without ``"v"``.

The platform's GUI drives an interactive worker with ``{"cmd": "reset", "seed": N}``,
``{"cmd": "step"}``, ``{"cmd": "ping"}`` and ``{"cmd": "stop"}`` and reads these lines back
(exactly these keys; ``render_payload`` only when the session sends JSON frames):

- at start: ``{"type": "init", "run_id", "env_id", "algo", "policy_path", "version": "1.0"}``
- reset: ``{"type": "ready", "run_id", "env_id", "algo", "seed", "observation_shape",
  "step_index": 0, "episode_index", "episode_reward": 0.0[, "render_payload"]}``
- step: ``{"type": "step", "step_index", "episode_index", "action", "reward", "terminated",
  "truncated", "episode_reward"[, "render_payload"]}``, then at an episode's end
  ``{"type": "episode_done", "total_reward", "episode_length", "episode_number"}``
- ping: ``{"type": "pong"}``; stop: ``{"type": "stopped"}``; any failure:
  ``{"type": "error", "message"}``.

``render_payload`` is ``{"mode": "rgb_array", "rgb": <nested list>, "width", "height"}``: the
deployed dialect's frame as JSON; version 1 of the protocol sends frames through FastLane.
This module writes these lines with :meth:`TelemetryEmitter.write_foreign` (no common fields,
as deployed). In training mode (no interactive session) ``ping`` and ``stop`` are answered and
every other command gets an ``error`` line.
"""

from __future__ import annotations

import queue
from collections.abc import Mapping
from typing import Any, Protocol


class LineWriter(Protocol):
    """What the control side writes its lines with: a
    :class:`~mosaic_sdk.telemetry.emitter.TelemetryEmitter` (the worker's stdout). Control
    builds on the telemetry stream but does not import it; the telemetry models import the
    reply model from :mod:`mosaic_sdk.control.protocol`, the one direction between the two."""

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
    try:
        channel.emitter.write_foreign(obj)
    except RuntimeError:
        pass  # the run's output is closed


def handle_legacy(channel: Channel, data: Mapping[str, object]) -> None:
    """A command without ``"v"``: to the interactive session, or answered here."""
    if channel.interactive is not None:
        if channel.interactive_ended:
            write(channel, error_line("the interactive session has ended"))
            return
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


__all__ = [
    "DIALECT_VERSION",
    "Channel",
    "LEGACY_COMMANDS",
    "error_line",
    "handle_legacy",
    "render_payload",
    "write",
]
