"""What the deployed platform can use of a worker's stdout: the platform level's line rules.

The platform reads a worker's stdout line by line. Its telemetry proxy forwards only JSON
objects whose ``"type"`` is ``"step"`` or ``"episode"`` (reading ``episode_index`` or
``episode``, ``step_index`` or ``step``) and drops everything else silently; lifecycle lines
are the platform emitter's ``{"event", "payload", "run_id", "timestamp"}`` (the SDK's
lifecycle lines carry the same fields, plus ``"type": "lifecycle"`` and its own). No
``schema_version``, ``seq`` or ``ts_unix_ns`` is required at this level.

:func:`platform_line_problems` reads the raw text of a line (not the reader's normalised
form, which accepts spellings the proxy drops) and returns every problem at once.
"""

from __future__ import annotations

import json
from typing import Any

#: Fields of a lifecycle line in the platform emitter's shape, with the JSON type each needs.
LIFECYCLE_FIELDS: dict[str, str] = {
    "event": "a string",
    "payload": "an object",
    "run_id": "a string",
    "timestamp": "a number",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES = {
    "a string": lambda v: isinstance(v, str) and v != "",
    "an object": lambda v: isinstance(v, dict),
    "a number": _is_number,
}


def _index(data: dict[str, Any], names: tuple[str, str], problems: list[str]) -> None:
    present = [n for n in names if n in data]
    if not present:
        problems.append(f"no {names[0]!r} (or {names[1]!r})")
        return
    value = data[present[0]]
    if not _is_int(value) or value < 0:
        problems.append(f"{present[0]!r} is {value!r}, not an integer >= 0")


def _optional(data: dict[str, Any], checks: dict[str, Any], problems: list[str]) -> None:
    for name, (test, what) in checks.items():
        if name in data and data[name] is not None and not test(data[name]):
            problems.append(f"{name!r} is {data[name]!r}, not {what}")


def step_problems(data: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    _index(data, ("episode_index", "episode"), problems)
    _index(data, ("step_index", "step"), problems)
    _optional(
        data,
        {
            "reward": (_is_number, "a number"),
            "terminated": (lambda v: isinstance(v, bool), "true/false"),
            "truncated": (lambda v: isinstance(v, bool), "true/false"),
        },
        problems,
    )
    return problems


def episode_problems(data: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    _index(data, ("episode_index", "episode"), problems)
    _optional(
        data,
        {
            "total_reward": (_is_number, "a number"),
            "steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
            "terminated": (lambda v: isinstance(v, bool), "true/false"),
            "truncated": (lambda v: isinstance(v, bool), "true/false"),
        },
        problems,
    )
    return problems


def lifecycle_problems(data: dict[str, Any]) -> list[str]:
    missing = [name for name in LIFECYCLE_FIELDS if name not in data]
    problems = [f"lifecycle line without {', '.join(map(repr, missing))}"] if missing else []
    for name, kind in LIFECYCLE_FIELDS.items():
        if name in data and not _TYPES[kind](data[name]):
            problems.append(f"{name!r} is {data[name]!r}, not {kind}")
    return problems


def platform_line_problems(text: str) -> list[str]:
    """Why the deployed platform cannot use this stdout line ([] when it can)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        what = "an empty line" if not stripped else "not JSON"
        return [f"{what}: the proxy drops it silently (a stray print or a library's output?)"]
    try:
        data = json.loads(stripped)
    except ValueError as exc:
        return [f"malformed JSON ({exc}): the proxy drops it silently"]
    if not isinstance(data, dict):
        return ["a JSON value that is not an object"]
    kind = data.get("type")
    if kind == "step":
        return step_problems(data)
    if kind == "episode":
        return episode_problems(data)
    if kind == "lifecycle" or (kind is None and "event" in data):
        return lifecycle_problems(data)
    if kind is not None:
        return [f'"type": {kind!r}: the proxy forwards only "step" and "episode" lines']
    legacy = data.get("event_type")
    if legacy is not None:
        return [
            f'"event_type": {legacy!r} (the guide\'s spelling) is dropped by the proxy; write '
            '"type": "step" / "episode" for steps and episodes, "event" for lifecycle lines'
        ]
    return ['a JSON object without "type" or "event": neither a step/episode nor a lifecycle line']


__all__ = [
    "LIFECYCLE_FIELDS",
    "episode_problems",
    "lifecycle_problems",
    "platform_line_problems",
    "step_problems",
]
