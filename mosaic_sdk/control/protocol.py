"""The control protocol, version 1: commands on a worker's stdin, replies on its stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mosaic_sdk.json_types import JsonObject

PROTOCOL_VERSION = 1
#: The file name of a run's control socket in its run directory: the runner serves it, and
#: ``mosaic control`` and ``mosaic watch`` connect to it (one name for both sides).
SOCKET_NAME = "control.sock"
SCHEMA_ID = "https://mosaic-worker-sdk.invalid/schema/control.schema.json"

#: Commands every worker that speaks the protocol answers, in training and interactive mode.
RUN_COMMANDS = ("ping", "pause", "resume", "stop", "checkpoint")
#: Commands of the interactive mode.
INTERACTIVE_COMMANDS = ("reset", "step", "act", "close")
COMMANDS = RUN_COMMANDS + INTERACTIVE_COMMANDS

#: Error codes of a reply (``error.code``).
ERROR_CODES = (
    "malformed_json",  # the line is not JSON, or not a JSON object
    "unsupported_version",  # "v" is not a version this worker speaks
    "unknown_command",  # "cmd" names no command
    "invalid_arguments",  # the command's fields are missing, extra or of the wrong type
    "out_of_order",  # e.g. step before reset, resume when not paused
    "not_supported",  # the worker does not claim what the command needs
    "not_interactive",  # an interactive command to a run that is not in interactive mode
    "illegal_action",  # a turn-based game refused the move (not played; legal_actions lists them)
    "failed",  # the worker tried and failed (the message says why)
)


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    v: Literal[1] = Field(description="Protocol version")
    id: str = Field(min_length=1, max_length=128, description="Echoed in the reply")


class Ping(_Command):
    """Is the worker there? The reply says whether it is paused."""

    cmd: Literal["ping"]


class Pause(_Command):
    """Stop stepping at the loop's next check until ``resume``; uses no CPU while paused."""

    cmd: Literal["pause"]


class Resume(_Command):
    """Continue a paused run from the step it stopped at."""

    cmd: Literal["resume"]


class Stop(_Command):
    """End the run gracefully, as SIGTERM does (``run_cancelled``)."""

    cmd: Literal["stop"]


class Checkpoint(_Command):
    """Save a checkpoint now (the worker must claim ``supports_checkpointing``)."""

    cmd: Literal["checkpoint"]


class Reset(_Command):
    """Interactive: start a new episode, seeded when ``seed`` is given."""

    cmd: Literal["reset"]
    seed: int | None = Field(None, ge=0)


class Step(_Command):
    """Interactive: advance one step with the worker's policy, or with ``action`` when given."""

    cmd: Literal["step"]
    action: Any = None


class Act(_Command):
    """Interactive: the policy's action for ``observation``, without stepping the env."""

    cmd: Literal["act"]
    observation: Any


class Close(_Command):
    """Interactive: end the session (``run_completed``)."""

    cmd: Literal["close"]


Command = Annotated[
    Ping | Pause | Resume | Stop | Checkpoint | Reset | Step | Act | Close,
    Field(discriminator="cmd"),
]
_COMMAND: TypeAdapter[Command] = TypeAdapter(Command)


class ErrorInfo(BaseModel):
    """Why a command failed: a short code, what was wrong, how to fix it."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1)
    message: str = Field(min_length=1)
    hint: str = ""


class FrameRef(BaseModel):
    """Where the frame of an interactive step is: the run's FastLane segment (never pixels)."""

    model_config = ConfigDict(extra="forbid")

    fastlane_run_id: str = Field(description="Attach with FastLaneReader.attach(this)")
    frames_published: int = Field(ge=0, description="Frames published so far by this run")
    pending: bool = Field(
        False,
        description="True: this state's frame is not published yet (the frame interval skipped "
        "it); the worker publishes it as frame frames_published + 1 within one interval unless "
        "another command moves on first. False: the newest published frame shows this state.",
    )


class Reply(BaseModel):
    """One reply (the body of a ``control_reply`` line, without the emitter's common fields).

    Which result fields are set depends on the command: ``ping``/``pause``/``resume``:
    ``paused``; ``stop``: ``stopping``; ``checkpoint``: ``checkpoint_path``; ``reset``:
    ``seed``, ``episode_index``, ``step_index`` (0), ``episode_return`` (0), ``observation``,
    ``frame``; ``step``: those plus ``action``, ``reward``, ``terminated``, ``truncated``,
    ``episode_done``; ``act``: ``action``; ``close``: ``closed``, ``frame``. A turn-based
    worker's ``reset`` and ``step`` replies add ``agent_id``, ``legal_actions`` and ``played``.
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["control_reply"] = "control_reply"
    v: Literal[1] = 1
    id: str | None = Field(description="The command's id (null when it could not be read)")
    cmd: str | None = Field(description="The command's name (null when it could not be read)")
    ok: bool
    error: ErrorInfo | None = None
    paused: bool | None = None
    stopping: bool | None = None
    checkpoint_path: str | None = None
    closed: bool | None = None
    seed: int | None = None
    episode_index: int | None = Field(None, ge=0)
    step_index: int | None = Field(None, ge=0, description="Steps taken in this episode")
    action: Any = None
    observation: Any = None
    reward: float | None = None
    terminated: bool | None = None
    truncated: bool | None = None
    episode_return: float | None = None
    episode_done: bool | None = None
    frame: FrameRef | None = None
    agent_id: str | None = Field(
        None,
        description="Turn-based interactive mode: the agent the person plays (whose turn it "
        "is unless the episode is done)",
    )
    legal_actions: list[Any] | None = Field(
        None,
        description="Turn-based interactive mode: the moves agent_id may make now (empty when "
        "the episode is done)",
    )
    played: list[dict[str, Any]] | None = Field(
        None,
        description="Turn-based interactive mode: the moves the worker's policy made for the "
        "other agents since the last reply, in order ({agent_id, action})",
    )


class ControlTimeout(TimeoutError):
    """No reply, or no frame, in time (raised on the client's side)."""


class ProtocolError(Exception):
    """A command that cannot be carried out; becomes an ``ok: false`` reply."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str = "",
        *,
        id: str | None = None,
        cmd: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.hint, self.id, self.cmd = code, message, hint, id, cmd

    def reply(self) -> dict[str, object]:
        """The reply's fields (see :func:`error_reply`)."""
        return error_reply(self.id, self.cmd, self.code, self.message, self.hint)


def error_reply(
    id: str | None, cmd: str | None, code: str, message: str, hint: str = ""
) -> dict[str, object]:
    """The fields of an ``ok: false`` reply (the emitter adds ``type`` and the common fields)."""
    return {
        "v": PROTOCOL_VERSION,
        "id": id,
        "cmd": cmd,
        "ok": False,
        "error": {"code": code, "message": message, "hint": hint},
    }


def ok_reply(id: str, cmd: str, **result: object) -> dict[str, object]:
    """The fields of an ``ok: true`` reply."""
    return {"v": PROTOCOL_VERSION, "id": id, "cmd": cmd, "ok": True, **result}


def decode_line(line: str | bytes) -> JsonObject:
    """Parse one line into a JSON object, or raise ``ProtocolError("malformed_json")``."""
    hint = 'send one JSON object per line, e.g. {"v": 1, "id": "1", "cmd": "ping"}'
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError("malformed_json", f"the line is not valid JSON ({exc})", hint) from None
    if not isinstance(data, dict):
        why = f"the line is JSON but not an object ({type(data).__name__})"
        raise ProtocolError("malformed_json", why, hint)
    return data


def parse_command(data: Mapping[str, object]) -> Command:
    """Validate one versioned command object (with ``"v"``); returns its model.

    Raises :class:`ProtocolError` with code ``unsupported_version``, ``unknown_command`` or
    ``invalid_arguments`` (carrying the id and name when they could be read).
    """
    raw_id = data.get("id")
    cid = raw_id if isinstance(raw_id, str) and 0 < len(raw_id) <= 128 else None
    raw_cmd = data.get("cmd")
    name = raw_cmd if isinstance(raw_cmd, str) else None
    if data.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(
            "unsupported_version",
            f"protocol version {data.get('v')!r} is not supported",
            f'this worker speaks version {PROTOCOL_VERSION}: send "v": {PROTOCOL_VERSION}',
            id=cid,
            cmd=name,
        )
    if name not in COMMANDS:
        raise ProtocolError(
            "unknown_command",
            f"unknown command {raw_cmd!r}",
            f"known commands: {', '.join(COMMANDS)}",
            id=cid,
            cmd=name,
        )
    try:
        return _COMMAND.validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'][1:]) or 'command'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ProtocolError(
            "invalid_arguments",
            f"bad {name!r} command: {problems}",
            'every command needs "v": 1 and a non-empty string "id"; see the control '
            "protocol reference for each command's arguments",
            id=cid,
            cmd=name,
        ) from None


def validate_reply(data: Mapping[str, object]) -> Reply:
    """Check a reply's fields (``type`` and the emitter's common fields are left out)."""
    common = {"run_id", "schema_version", "seq", "ts_unix_ns", "worker_id"}
    return Reply.model_validate({k: v for k, v in data.items() if k not in common})


def read_reply(data: Mapping[str, object]) -> Reply:
    """A reply as a client reads it: :func:`validate_reply`, except that fields this SDK does
    not know (added by a newer worker within protocol version 1, at the top or in ``frame`` or
    ``error``) are left out instead of refused. What it knows is checked as strictly."""
    known = {k: v for k, v in data.items() if k in Reply.model_fields}
    for key, model in (("frame", FrameRef), ("error", ErrorInfo)):
        inner = known.get(key)
        if isinstance(inner, dict):
            known[key] = {k: v for k, v in inner.items() if k in model.model_fields}
    return Reply.model_validate(known)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the protocol: a command or a reply."""
    commands = _COMMAND.json_schema(ref_template="#/$defs/{model}")
    reply = Reply.model_json_schema(ref_template="#/$defs/{model}")
    defs = {**commands.pop("$defs", {}), **reply.pop("$defs", {}), "Command": commands}
    defs["Reply"] = reply
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"MOSAIC control protocol, version {PROTOCOL_VERSION}: one command or reply",
        "anyOf": [{"$ref": "#/$defs/Command"}, {"$ref": "#/$defs/Reply"}],
        "$defs": defs,
    }


def render_schema() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover - exercised by the schema freshness test
    sys.stdout.write(render_schema())
