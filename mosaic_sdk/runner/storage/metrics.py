"""The training metrics a run reported, as ``mosaic runs show`` prints them: per custom event
name, its count and the latest value of each numeric payload field (nested objects give dotted
names); how many episodes carried metadata, with the latest value of each key."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from mosaic_sdk.runner.storage.records import JsonValue
from mosaic_sdk.telemetry.emitter import LIFECYCLE_EVENTS, METRICS_EVENT
from mosaic_sdk.telemetry.episode_index import caller_metadata

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.store import RunStore

#: A string value longer than this is cut (metadata may hold anything).
MAX_TEXT = 80


class EventMetrics(TypedDict):
    """One custom event name: how many the run wrote, the latest value of each numeric field."""

    count: int
    latest: dict[str, float]


class EpisodeMetadata(TypedDict):
    """How many episodes carried metadata, and the latest value of each key (as shown)."""

    episodes: int
    latest: dict[str, JsonValue]


class RunMetrics(TypedDict):
    """What :func:`run_metrics` returns (``mosaic runs show --json`` prints it as ``metrics``)."""

    events: dict[str, EventMetrics]
    episode_metadata: EpisodeMetadata


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _flatten(data: Mapping[str, JsonValue], prefix: str = "") -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _scalar(value: JsonValue) -> JsonValue:
    """A metadata value as shown: a string cut to :data:`MAX_TEXT`, a list as ``<list of N>``."""
    if value is None or isinstance(value, bool) or _numeric(value):
        return value
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 3] + "..."
    if isinstance(value, list):
        return f"<list of {len(value)}>"
    return str(value)  # a non-finite float, as the telemetry reader decoded it


def run_metrics(store: RunStore, run_id: str) -> RunMetrics:
    """``{"events": {name: {"count": N, "latest": {field: number}}},
    "episode_metadata": {"episodes": N, "latest": {key: value}}}`` for one run."""
    events: dict[str, EventMetrics] = {}
    # metrics events are series (RunStore.series): runs show lists them apart
    for row in store.custom_events(run_id, (*LIFECYCLE_EVENTS, METRICS_EVENT)):
        entry = events.setdefault(row["event"], {"count": 0, "latest": {}})
        entry["count"] += 1
        try:
            payload = json.loads(row["payload_json"] or "{}")
        except ValueError:
            continue
        if isinstance(payload, dict):
            for name, value in _flatten(payload).items():
                if isinstance(value, int | float) and _numeric(value):
                    entry["latest"][name] = value
    with_metadata = 0
    latest: dict[str, JsonValue] = {}
    for raw in store.episode_lines(run_id, '"metadata"'):
        try:
            metadata = caller_metadata(json.loads(raw))
        except (ValueError, AttributeError):
            continue
        if isinstance(metadata, dict) and metadata:
            with_metadata += 1
            latest.update({k: _scalar(v) for k, v in _flatten(metadata).items()})
    return {"events": events, "episode_metadata": {"episodes": with_metadata, "latest": latest}}


def format_value(value: JsonValue) -> str:
    """A metric value for the text view: floats with 6 significant digits."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)
