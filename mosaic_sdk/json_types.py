"""The types of JSON data, defined once for every floor: what :func:`json.loads` returns
(:data:`JsonValue`) and a JSON object (:data:`JsonObject`).

Standard library only, and nothing imported at run time beyond :mod:`typing`, so a worker
process (floor 1: :mod:`mosaic_sdk.control`, :mod:`mosaic_sdk.telemetry`...) can name them
as cheaply as the runner's store (:mod:`mosaic_sdk.runner.storage.records` re-exports them).

A value *received* as JSON is typed with these; a parameter that only *accepts* something to
serialise is better typed ``Mapping[str, object]`` (``dict[str, JsonValue]`` is invariant, so
a caller's ``dict[str, int]`` would not fit it).
"""

from __future__ import annotations

from typing import TypeAlias

#: A JSON value as :func:`json.loads` returns it.
JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
#: A JSON object (a run's config, an event's payload, a control line).
JsonObject: TypeAlias = dict[str, JsonValue]

__all__ = ["JsonObject", "JsonValue"]
