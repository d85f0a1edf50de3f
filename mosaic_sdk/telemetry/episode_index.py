"""Where a step or episode line carries its episode index: one rule to write it, one to read it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mosaic_sdk.telemetry.encoding import dumps

#: The key of ``metadata`` the platform's proxy reads the episode index from.
METADATA_KEY = "episode_index"

#: Where :func:`platform_episode_index` found the index.
FROM_METADATA_JSON = "metadata_json"
FROM_METADATA = "metadata"
FROM_EPISODE = "episode"
FROM_DEFAULT = "default"


def unsigned(name: str, value: Any, bits: int = 64) -> int:
    """``value`` as an int in ``[0, 2**bits)``, the range of the proxy's protobuf field;
    ``ValueError`` saying what was wrong otherwise (numpy integers are accepted)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if number != value or isinstance(value, (bool, str, bytes)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not 0 <= number < 1 << bits:
        raise ValueError(
            f"{name} must be between 0 and 2**{bits} - 1 (the platform's proxy stores it "
            f"unsigned), got {number}"
        )
    return number


def line_metadata(episode_index: int, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``metadata`` object of a step or episode line: the caller's ``metadata`` (or none)
    with ``episode_index`` set; ``ValueError`` when it already holds a different one."""
    index = int(episode_index)
    out = dict(metadata) if metadata else {}
    given = out.get(METADATA_KEY, index)
    if isinstance(given, bool) or given != index:
        raise ValueError(
            f"metadata['{METADATA_KEY}'] is {given!r} but the line's episode_index is {index}: "
            f"the platform's proxy reads the episode index from metadata; drop the key from "
            f"metadata (the emitter adds it) or make it equal"
        )
    out[METADATA_KEY] = index
    return out


def metadata_json(episode_index: int, metadata: Mapping[str, Any] | None = None) -> str:
    """:func:`line_metadata` as compact JSON text with sorted keys (the emitter's form)."""
    if not metadata:
        return f'{{"{METADATA_KEY}":{int(episode_index)}}}'
    return dumps(line_metadata(episode_index, metadata))


def platform_episode_index(data: Mapping[str, Any]) -> tuple[Any, str]:
    """``(value, where)``: the episode index the platform's proxy takes from a parsed step or
    episode line, before its ``int()``, and where it found it (a ``FROM_*`` constant;
    :data:`FROM_DEFAULT` gives 0). ``ValueError`` where the proxy itself fails: metadata as
    JSON text of something that is not an object."""
    where = FROM_METADATA_JSON if FROM_METADATA_JSON in data else FROM_METADATA
    meta = data.get(where, "{}")
    value = None
    if isinstance(meta, str):
        try:
            parsed = json.loads(meta)
        except ValueError:  # not JSON: the proxy ignores it
            parsed = {}
        if not isinstance(parsed, dict):
            raise ValueError(
                f"{where!r} is JSON text of {type(parsed).__name__} {parsed!r:.40}, not of an "
                "object: the platform's proxy fails on it (AttributeError)"
            )
        value = parsed.get(METADATA_KEY)
    elif isinstance(meta, dict):
        value = meta.get(METADATA_KEY)
    if value is not None:
        return value, where
    if FROM_EPISODE in data:
        return data[FROM_EPISODE], FROM_EPISODE
    return 0, FROM_DEFAULT


def caller_metadata(data: Mapping[str, Any]) -> Any:
    """A parsed line's ``metadata`` without the ``episode_index`` copy the SDK adds (the key
    is left out when it equals the line's top-level ``episode_index``); None when absent."""
    meta = data.get("metadata")
    if isinstance(meta, dict) and METADATA_KEY in meta:
        index = data.get("episode_index")
        given = meta[METADATA_KEY]
        if type(given) is int and type(index) is int and given == index:
            return {k: v for k, v in meta.items() if k != METADATA_KEY}
    return meta
