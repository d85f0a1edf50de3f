"""Reading telemetry: classify each stdout line of a worker, accept the upstream shapes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from mosaic_sdk.telemetry.episode_index import FROM_DEFAULT, FROM_EPISODE, platform_episode_index

KINDS = ("lifecycle", "step", "episode", "control_reply", "log", "invalid")
#: The kinds that are telemetry (the rest is library output or broken).
TELEMETRY_KINDS = frozenset(("lifecycle", "step", "episode", "control_reply"))

#: JSON nested deeper than this (arrays and objects inside each other) is an ``invalid`` line:
#: no telemetry needs it, and code that walks parsed values recursively (``json.dumps``, a
#: hook, pydantic, SQLite's JSON functions) could fail on it.
MAX_JSON_DEPTH = 100


class TelemetryLine:
    """One classified line. ``data`` is the parsed object (``{}`` for log lines). Not a
    dataclass: ``dataclasses`` costs ~8 ms of import time."""

    __slots__ = ("kind", "text", "data", "error")

    def __init__(
        self, kind: str, text: str, data: dict[str, Any] | None = None, error: str | None = None
    ) -> None:
        self.kind = kind
        self.text = text
        self.data = {} if data is None else data
        self.error = error

    def __repr__(self) -> str:
        return f"TelemetryLine(kind={self.kind!r}, data={self.data!r}, error={self.error!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TelemetryLine):
            return NotImplemented
        return self._key() == other._key()

    def _key(self) -> tuple[object, ...]:
        return (self.kind, self.text, self.data, self.error)

    @property
    def is_telemetry(self) -> bool:
        return self.kind in TELEMETRY_KINDS


def _kind_of(data: dict[str, Any]) -> tuple[str, str | None]:
    kind = data.get("type")
    if kind in TELEMETRY_KINDS:
        return kind, None
    if kind is not None:
        return "invalid", f"unknown telemetry type {kind!r}"
    legacy = data.get("event_type")
    if legacy in ("step", "episode"):
        return legacy, None
    if isinstance(legacy, str) or isinstance(data.get("event"), str):
        return "lifecycle", None
    return "invalid", "a JSON object without 'type', 'event_type' or 'event'"


def _normalise(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    if "type" not in data:
        data["type"] = kind
        legacy = data.pop("event_type", None)
        if kind == "lifecycle" and "event" not in data and isinstance(legacy, str):
            data["event"] = legacy
    if kind in ("step", "episode"):
        if "episode_index" not in data:
            _platform_index(data)
        if kind == "step" and "step_index" not in data and "step" in data:
            data["step_index"] = data.pop("step")
    return data


def _platform_index(data: dict[str, Any]) -> None:
    """A line without ``episode_index`` (not written by the SDK): take the index where the
    platform's proxy takes it (``metadata.episode_index``, else ``episode``). An ``episode``
    beside a metadata index is kept (the platform's trainer writes seed + index there)."""
    try:
        value, where = platform_episode_index(data)
    except ValueError:  # metadata the proxy fails on: read the plain alias, as before
        where = FROM_EPISODE if "episode" in data else FROM_DEFAULT
        value = data.get("episode")
    if where == FROM_EPISODE:
        data["episode_index"] = data.pop("episode")
    elif where != FROM_DEFAULT:
        data["episode_index"] = value


def json_depth_exceeds(value: object, limit: int) -> bool:
    """True when ``value`` (parsed JSON) nests lists and dicts more than ``limit`` deep.

    Iterative (it cannot itself run out of stack) and stops at the first too-deep container.
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[object] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        if depth > limit:
            return True
        stack.extend((child, depth) for child in children if isinstance(child, (dict, list)))
    return False


_TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels (kept as text)"


def classify_line(raw: str | bytes) -> TelemetryLine:
    """Classify one line (without its newline, or with it: trailing whitespace is ignored).

    Cheap (one ``json.loads``): tells a telemetry line (``lifecycle``, ``step``, ``episode``,
    ``control_reply``) from library output (``log``: text that is not JSON) and from broken
    telemetry (``invalid``: JSON that is not a telemetry object, text that starts like JSON but
    does not parse or nests deeper than :data:`MAX_JSON_DEPTH`, or a step or episode line whose
    ``agent_id`` is not a string: ``5`` and ``"5"`` would be one agent once stored as text).
    Never raises, for any ``str`` or ``bytes``: whatever goes wrong while parsing gives an
    ``invalid`` line that keeps the text and says why in ``error``. It accepts the three
    discriminators found upstream: ``type`` (ours and the proxy's), ``event_type`` (the worker
    guide) and ``event`` (the platform's lifecycle emitter), and the ``episode``/``step``
    aliases of ``episode_index``/``step_index``; a line without ``episode_index`` gets the index
    the platform's proxy reads (``metadata.episode_index``, else ``episode``). The result's
    ``data`` is normalised to our field names.
    """
    if isinstance(raw, (bytes, bytearray, memoryview)):
        text = bytes(raw).decode("utf-8", errors="replace")
    else:
        text = str(raw)
    try:
        return _classify(text)
    except Exception as exc:  # noqa: BLE001 - documented never to raise: keep the line
        return TelemetryLine(
            "invalid", text.rstrip("\r\n"), error=f"unreadable line: {type(exc).__name__}: {exc}"
        )


def _classify(text: str) -> TelemetryLine:
    text = text.rstrip("\r\n")
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return TelemetryLine("log", text)
    try:
        data = json.loads(stripped)
    except RecursionError:
        return TelemetryLine("invalid", text, error=_TOO_DEEP)
    except ValueError as exc:
        return TelemetryLine("invalid", text, error=f"malformed JSON: {exc}")
    # A text of n characters nests at most n/2 deep, and at most as deep as it has brackets:
    # both checks are cheap and skip the walk for ordinary lines.
    if (
        len(stripped) > 2 * MAX_JSON_DEPTH
        and stripped.count("[") + stripped.count("{") > MAX_JSON_DEPTH
        and json_depth_exceeds(data, MAX_JSON_DEPTH)
    ):
        return TelemetryLine("invalid", text, error=_TOO_DEEP)
    if not isinstance(data, dict):
        return TelemetryLine("invalid", text, error="a JSON value that is not an object")
    kind, error = _kind_of(data)
    if error:
        return TelemetryLine("invalid", text, data, error)
    if kind in ("step", "episode"):
        agent = data.get("agent_id")
        if agent is not None and type(agent) is not str:
            return TelemetryLine("invalid", text, data, agent_id_error(agent))
    return TelemetryLine(kind, text, _normalise(kind, data))


def agent_id_error(agent: object) -> str:
    """Why a step or episode line whose ``agent_id`` is not a string is ``invalid`` (``5`` and
    ``"5"`` would be one agent once stored as text)."""
    shown = json.dumps(agent, ensure_ascii=True, default=str)
    shown = shown if len(shown) <= 60 else shown[:50] + "..."
    return (
        f"agent_id must be a string (or null), got a JSON {_json_type(agent)} {shown}; write "
        "the agent's id as text"
    )


_JSON_TYPES = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def validate_line(data: Mapping[str, object]) -> list[str]:
    """Strict check of one parsed telemetry object against the schema; [] when valid."""
    # Imported here: the pydantic models only for a strict check (import stays light).
    from mosaic_sdk.telemetry.models import validate_object

    return validate_object(data)
