"""What becomes a series: the points ``(step, value, wall time)`` of a run's lifecycle lines."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage.rows import LineBatch, text
from mosaic_sdk.telemetry import LIFECYCLE_EVENTS, METRICS_EVENT

#: Distinct (name, agent_id) series a run may have; points of further series are refused.
MAX_SERIES = 10_000
#: The longest series name kept (characters); a longer one is refused.
MAX_NAME_CHARS = 1024
#: The payload keys that give a worker's own lifecycle event its x value, first found first.
X_KEYS: tuple[str, ...] = ("global_step", "step", "iteration", "update")
#: Events that are not series (the standard lifecycle, and the ``metrics`` event, read apart).
NOT_SERIES_EVENTS = frozenset(LIFECYCLE_EVENTS) | {METRICS_EVENT}

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NOT_NUMBER = object()


def _value(value: object) -> float | object:
    """The float of a JSON number (NaN and infinities kept), else ``_NOT_NUMBER``."""
    if type(value) is float:
        return value
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:  # 10**400 written as an integer: infinite as a float
            return float("inf") if value > 0 else float("-inf")
    return _NOT_NUMBER


def integer_step(value: object) -> int | None:
    """``value`` as an x value: an integer (or an integral float) that fits 64 bits."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return value
    return None


def flatten(
    values: Mapping[str, Any], prefix: str = "", skip: frozenset[str] = frozenset()
) -> tuple[dict[str, float], int]:
    """``(numbers by dotted name, how many leaves were no numbers)`` of a nested mapping
    (``skip``: top-level keys left out). A name that comes twice keeps its last value."""
    out: dict[str, float] = {}
    others = 0
    stack: list[tuple[str, Mapping[str, Any], frozenset[str]]] = [(prefix, values, skip)]
    nothing: frozenset[str] = frozenset()
    while stack:
        head, mapping, left_out = stack.pop()
        for key, value in mapping.items():
            if key in left_out:
                continue
            name = f"{head}{key}"
            number = _value(value)
            if number is not _NOT_NUMBER:
                out[name] = number  # type: ignore[assignment]
            elif isinstance(value, Mapping):
                stack.append((name + ".", value, nothing))
            else:
                others += 1
    return out, others


class SeriesIngest:
    """Numbers one run's series and adds the points of its lifecycle lines to its batches.

    ``metrics``: each key of ``values`` (dotted names) at ``step``; without an integer ``step``,
    and for a value that is no number, refused. A worker's own event: each numeric payload
    field as ``<event>/<field>`` at the first of :data:`X_KEYS`, else the event's ordinal. Past
    :data:`MAX_SERIES` series or :data:`MAX_NAME_CHARS` characters, refused (warned once)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.ids: dict[tuple[str, str | None], int] = {}
        self.ordinals: dict[str, int] = {}
        self.points = 0
        self.refused = 0
        self._told_limit = False

    def metrics(self, batch: LineBatch, line_no: int, payload: Any, ts: Any) -> None:
        """The points of a ``metrics`` line (its ``payload`` and ``ts_unix_ns``)."""
        if type(payload) is not dict and not isinstance(payload, Mapping):
            return
        values = payload.get("values")
        if type(values) is not dict and not isinstance(values, Mapping):
            self._refuse(batch, 1 if values is not None else 0)
            return
        # The usual event, a flat object of floats, is its own flattening (and the loop below
        # is a tenth of flatten's cost: one in ten lines of a run that reports series).
        numbers: Mapping[str, float] = values
        others = 0
        for value in values.values():
            if type(value) is not float:
                numbers, others = flatten(values)
                break
        step = payload.get("step")
        if type(step) is not int or not _INT64_MIN <= step <= _INT64_MAX:
            step = integer_step(step)
        if step is None:
            self._refuse(batch, len(numbers) + others)
            return
        if others:
            self._refuse(batch, others)
        agent = payload.get("agent_id")
        self._add(batch, line_no, ts, numbers, step, None if agent is None else text(agent))

    def lifecycle(self, batch: LineBatch, line_no: int, name: str, d: Mapping[str, Any]) -> None:
        """The points of a worker's own lifecycle line called ``name`` (none for the
        standard events and ``metrics``)."""
        if name in NOT_SERIES_EVENTS:
            return
        ordinal = self.ordinals.get(name, 0)
        self.ordinals[name] = ordinal + 1
        payload = d.get("payload")
        if not isinstance(payload, Mapping):
            return
        step = None
        for key in X_KEYS:
            step = integer_step(payload.get(key))
            if step is not None:
                break
        numbers, _ = flatten(payload, f"{name}/", skip=frozenset(X_KEYS))
        if not numbers:
            return
        agent = d.get("agent_id")
        self._add(
            batch,
            line_no,
            d.get("ts_unix_ns"),
            numbers,
            ordinal if step is None else step,
            None if agent is None else text(agent),
        )

    def _refuse(self, batch: LineBatch, n: int) -> None:
        batch.refused += n
        self.refused += n

    def _add(
        self,
        batch: LineBatch,
        line_no: int,
        wall: Any,
        numbers: Mapping[str, float],
        step: int,
        agent: str | None,
    ) -> None:
        """Add ``numbers`` at ``step``; ``wall`` is the line's ``ts_unix_ns`` (if any)."""
        if type(wall) is not int or not _INT64_MIN <= wall <= _INT64_MAX:
            wall = integer_step(wall)
            if wall is None:
                wall = time.time_ns()
        run_id, ids, points = self.run_id, self.ids, batch.points
        refused = 0
        for name, value in numbers.items():
            key = (name, agent)
            sid = ids.get(key)
            if sid is None:
                if len(name) > MAX_NAME_CHARS or not name:
                    refused += 1
                    continue
                if len(ids) >= MAX_SERIES:
                    refused += 1
                    self._limit(name)
                    continue
                name = text(name)  # a lone surrogate becomes its escape: the name binds
                sid = ids[key] = len(ids) + 1
                batch.series.append((run_id, sid, name, agent))
            points.append((run_id, sid, step, wall, line_no, value))
        self.points += len(numbers) - refused
        if refused:
            self._refuse(batch, refused)

    def _limit(self, name: str) -> None:
        if self._told_limit:
            return
        self._told_limit = True
        current_reporter().warn(
            f"run {self.run_id} reports more than {MAX_SERIES} distinct series (the "
            f"first refused: {name[:80]!r}); points of further series are refused and "
            "counted (`mosaic runs show` says how many); report fewer names, e.g. "
            "aggregate per-item numbers"
        )
