"""JSON encoding of telemetry values: compact, sorted keys, numpy-aware, without importing numpy."""

from __future__ import annotations

import json
import math
from typing import Any


def json_default(obj: Any) -> Any:
    """``default=`` hook for ``json.dumps``: numpy values, sets, bytes, paths, enums."""
    tolist = getattr(obj, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return tolist()
    item = getattr(obj, "item", None)
    if callable(item):
        return item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).hex()
    fspath = getattr(obj, "__fspath__", None)
    if callable(fspath):
        return fspath()
    value = getattr(obj, "value", None)  # enums
    if value is not None and type(obj).__module__ != "builtins":
        return value
    model_dump = getattr(obj, "model_dump", None)  # pydantic models
    if callable(model_dump):
        return model_dump(mode="json")
    raise TypeError(f"telemetry cannot encode a value of type {type(obj).__name__}")


_encoder = json.JSONEncoder(
    separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=json_default
)
dumps = _encoder.encode
"""``json.dumps`` with the telemetry settings: compact, sorted keys, numpy-aware."""


def encode_value(value: Any) -> str:
    """JSON text of one value, with fast paths for the common scalar types."""
    cls = type(value)
    if cls is float:
        return repr(value) if math.isfinite(value) else dumps(value)
    if cls is int:
        return str(value)
    if cls is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    return dumps(value)


def lone_surrogate_at(value: Any) -> str | None:
    """Where in ``value`` (nested dicts and lists, keys included) a string holds a lone
    surrogate, as a path such as ``$.id`` or ``$.args[2]``; ``None`` when every string is
    valid Unicode text. Such strings come from JSON ``\\udXXX`` escapes or from names decoded
    with ``surrogateescape``; no UTF-8 stream can carry them as they are."""
    todo: list[tuple[str, Any]] = [("$", value)]
    while todo:
        path, item = todo.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return path
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and lone_surrogate_at(key) is not None:
                    return f"{path} (a key)"
                todo.append((f"{path}.{key}", sub))
        elif isinstance(item, (list, tuple)):
            todo.extend((f"{path}[{i}]", sub) for i, sub in enumerate(item))
    return None
