"""What the deployed platform can use of a worker's stdout: the platform level's line rules."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from mosaic_sdk.telemetry.episode_index import (
    FROM_DEFAULT,
    FROM_EPISODE,
    FROM_METADATA,
    METADATA_KEY,
    platform_episode_index,
)

#: What happens when the proxy fails on a line.
STOPS = "its reader stops there: nothing after this line reaches the platform"


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: A test of a field's value and what it says the value must be.
Rule = tuple[Callable[[object], bool], str]
_NUMBER: Rule = (_is_number, "a number")
_BOOL: Rule = (lambda v: isinstance(v, bool), "true/false")
_STRING: Rule = (lambda v: isinstance(v, str) and v != "", "a string")

#: Fields of a lifecycle line in the platform emitter's shape, with the JSON type each needs.
LIFECYCLE_FIELDS: dict[str, Rule] = {
    "event": _STRING,
    "payload": (lambda v: isinstance(v, dict), "an object"),
    "run_id": _STRING,
    "timestamp": _NUMBER,
}


def _non_negative(label: str, value: object, problems: list[str]) -> None:
    if not _is_int(value) or value < 0:
        problems.append(f"{label} is {value!r}, not an integer >= 0")


def _index(data: Mapping[str, object], names: tuple[str, str], problems: list[str]) -> None:
    present = [n for n in names if n in data]
    if not present:
        problems.append(f"no {names[0]!r} (or {names[1]!r})")
    else:
        _non_negative(repr(present[0]), data[present[0]], problems)


def _optional(data: Mapping[str, object], checks: Mapping[str, Rule], problems: list[str]) -> None:
    for name, (test, what) in checks.items():
        if name in data and data[name] is not None and not test(data[name]):
            problems.append(f"{name!r} is {data[name]!r}, not {what}")


def _episode_index_shape(data: Mapping[str, object], problems: list[str]) -> None:
    """An episode index somewhere the proxy or the SDK reads it, an integer >= 0 each (where
    the proxy reads it and whether it fails: :func:`proxy_problems`)."""
    meta = data.get("metadata")
    if isinstance(meta, dict) and meta.get(METADATA_KEY) is not None:
        _non_negative("'metadata.episode_index'", meta[METADATA_KEY], problems)
    try:
        where = platform_episode_index(data)[1]
    except ValueError:  # the proxy fails on the metadata: proxy_problems says so
        where = FROM_METADATA
    if where == FROM_DEFAULT and "episode_index" not in data:
        problems.append(
            "no episode index ('metadata.episode_index', where the platform's proxy reads it, "
            "or 'episode'; and 'episode_index', where the SDK reads it)"
        )
    for name in ("episode_index", "episode"):
        if name in data:
            _non_negative(repr(name), data[name], problems)


def step_problems(data: Mapping[str, object]) -> list[str]:
    problems: list[str] = []
    _episode_index_shape(data, problems)
    _index(data, ("step_index", "step"), problems)
    _optional(data, {"reward": _NUMBER, "terminated": _BOOL, "truncated": _BOOL}, problems)
    return problems


def episode_problems(data: Mapping[str, object]) -> list[str]:
    problems: list[str] = []
    _episode_index_shape(data, problems)
    steps: Rule = (lambda v: _is_int(v) and v >= 0, "an integer >= 0")
    rules = {"total_reward": _NUMBER, "steps": steps, "terminated": _BOOL, "truncated": _BOOL}
    _optional(data, rules, problems)
    return problems


def lifecycle_problems(data: Mapping[str, object]) -> list[str]:
    missing = [name for name in LIFECYCLE_FIELDS if name not in data]
    problems = [f"lifecycle line without {', '.join(map(repr, missing))}"] if missing else []
    for name, (test, what) in LIFECYCLE_FIELDS.items():
        if name in data and not test(data[name]):
            problems.append(f"{name!r} is {data[name]!r}, not {what}")
    return problems


def platform_line_problems(text: str) -> list[str]:
    """Why the deployed platform cannot use this stdout line ([] when it can)."""
    stripped = text.strip()
    if not stripped:
        return ["an empty line: the proxy drops it silently (a stray print?)"]
    try:
        data = json.loads(stripped)
    except ValueError as exc:
        if not stripped.startswith("{"):
            return ["not JSON: the proxy drops it silently (a stray print or a library's output?)"]
        return [f"malformed JSON ({exc}): the proxy drops it silently"]
    except RecursionError:
        return ["JSON nested too deeply to parse: the proxy's reader fails on it; " + STOPS]
    if not isinstance(data, dict):
        return [
            f"a JSON value that is not an object ({type(data).__name__}, a stray print?): the "
            f"proxy's reader fails on it (AttributeError); {STOPS}"
        ]
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


# --- what the proxy makes of a step or episode line --------------------------------------


def forwarded(data: object) -> bool:
    """Whether the proxy forwards this parsed line (a step or an episode)."""
    return isinstance(data, dict) and str(data.get("type", "")).lower() in ("step", "episode")


def _converts(
    problems: list[str], label: str, value: object, convert: Callable[[Any], Any], bits: int = 0
) -> Any:
    """``convert(value)`` as the proxy does it; a problem when that fails, or when the result
    does not fit the proxy's unsigned protobuf field of ``bits`` bits."""
    try:
        out = convert(value)
    except (TypeError, ValueError, OverflowError) as exc:
        problems.append(
            f"{label} is {value!r:.40}: the proxy's {convert.__name__.rstrip('()')}() fails on it "
            f"({type(exc).__name__}); {STOPS}"
        )
        return None
    if bits and not 0 <= out < 1 << bits:
        problems.append(
            f"{label} is {value!r:.40}: outside the proxy's unsigned {bits}-bit field "
            f"(ValueError); {STOPS}"
        )
        return None
    return out


def _int_of_float(value: Any) -> int:
    return int(float(value))


_int_of_float.__name__ = "int(float())"


def proxy_episode_index(data: Mapping[str, object]) -> tuple[int | None, list[str]]:
    """The episode index the platform gets for a step or episode line (None when the proxy
    fails on the line) and the problems: a failure, or an index that is not the SDK's."""
    problems: list[str] = []
    try:
        raw, where = platform_episode_index(data)
    except ValueError as exc:
        return None, [f"{exc}; {STOPS}"]
    label = "'episode'" if where == FROM_EPISODE else f"{where}.episode_index"
    got = _converts(problems, label, raw, int, 64)
    if got is None:
        return None, problems
    sdk = data.get("episode_index")
    if "episode_index" in data and _is_int(sdk):
        if where == FROM_DEFAULT:
            problems.append(
                f"'episode_index' {sdk} is never read by the platform's proxy (it reads "
                f"metadata.episode_index, else 'episode'): the line reaches the platform as "
                f'episode 0; add "metadata": {{"episode_index": {sdk}}}'
            )
        elif got != sdk:
            problems.append(
                f"{label} is {raw!r} but 'episode_index' is {sdk}: the platform shows this "
                f"line under episode {got}, the SDK under {sdk}"
            )
    return got, problems


def proxy_problems(data: Mapping[str, object]) -> list[str]:
    """What goes wrong when the platform's proxy reads this step or episode line ([] when it
    forwards the line whole, under the SDK's episode index)."""
    _, problems = proxy_episode_index(data)
    get = data.get
    if str(get("type", "")).lower() == "step":
        _converts(problems, "'step_index'", get("step_index", get("step", 0)), int, 64)
        _converts(problems, "'reward'", get("reward", 0.0), float)
        _converts(problems, "'payload_version'", get("payload_version", 0), int, 32)
        _converts(problems, "'episode_seed'", get("episode_seed", 0), int, 64)
    else:
        _converts(problems, "'total_reward'", get("total_reward", get("reward", 0.0)), float)
        _converts(problems, "'steps'", get("steps", 0), int, 64)
    ts = get("ts_unix_ns")
    if isinstance(ts, (int, float, str)) and str(ts).replace(".", "").replace("-", "").isdigit():
        ns = _converts(problems, "'ts_unix_ns'", ts, _int_of_float)
        if ns is not None and not -(1 << 63) <= ns // 1_000_000_000 < 1 << 63:
            problems.append(f"'ts_unix_ns' is {ts!r:.40}: too large for a timestamp; {STOPS}")
    return problems
