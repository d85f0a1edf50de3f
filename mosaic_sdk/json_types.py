"""The types of JSON data, defined once for every floor: what :func:`json.loads` returns
(:data:`JsonValue`) and a JSON object (:data:`JsonObject`).
"""

from __future__ import annotations

from typing import TypeAlias

#: A JSON value as :func:`json.loads` returns it.
JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
#: A JSON object (a run's config, an event's payload, a control line).
JsonObject: TypeAlias = dict[str, JsonValue]
