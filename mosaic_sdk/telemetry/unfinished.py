"""Unfinished episodes: the one rule (``docs/reference/telemetry.md#unfinished-episodes``).

An episode cut off by the end of the run (a step budget, a stop, a time limit) is reported
with an episode line like any other, so that every step line has its episode line, but
flagged: ``truncated: true``, ``terminated: false`` and ``metadata.unfinished: true``. Such an
episode is not a finished episode: it counts in no episode count (``run_completed``'s
``episodes``, the store's ``episodes``), in no return, curve, export or objective, unless
asked (``include_unfinished``). Its steps were taken: they count as env steps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: The key of an episode line's ``metadata`` that flags it unfinished (its value: ``true``).
UNFINISHED_KEY = "unfinished"


def is_unfinished(line: Mapping[str, Any]) -> bool:
    """Whether a parsed episode line is flagged unfinished: ``metadata.unfinished`` is JSON
    ``true`` (``metadata`` an object, or the JSON text of one, as the platform's
    ``metadata_json``). Never raises."""
    for key in ("metadata", "metadata_json"):
        meta = line.get(key)
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except (ValueError, RecursionError):
                continue
        if isinstance(meta, Mapping) and meta.get(UNFINISHED_KEY) is True:
            return True
    return False


def raw_is_unfinished(raw: object) -> int:
    """:func:`is_unfinished` of the text of a stored line, as 0 or 1 (a line that is not a
    JSON object is not flagged). For a store written before the flag had its column."""
    if not isinstance(raw, str) or UNFINISHED_KEY not in raw:
        return 0
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return 0
    return int(isinstance(data, dict) and is_unfinished(data))


__all__ = ["UNFINISHED_KEY", "is_unfinished", "raw_is_unfinished"]
