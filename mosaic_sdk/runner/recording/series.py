"""What becomes a series: the points ``(step, value, wall time)`` of a run's lifecycle lines."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage.rows import LineBatch, text
from mosaic_sdk.telemetry import LIFECYCLE_EVENTS, METRICS_EVENT
from mosaic_sdk.telemetry.emitter import MAX_STEP

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
_NONE_TWICE: Mapping[str, int] = {}  # (never written: the usual line's names that came twice)


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
    """``value`` as a time stamp: an integer (or an integral float) that fits 64 bits."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return value
    return None


def whole(value: object) -> int | None:
    """``value`` as an integer (an integral float too, of any size), else None."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    return None


def _agent_id(value: object) -> bool:
    """Whether ``value`` may be a line's ``agent_id``: None (no agent) or a non-empty string,
    the emitter's rule."""
    return value is None or (type(value) is str and value != "")


def flatten(
    values: Mapping[str, Any], prefix: str = "", skip: frozenset[str] = frozenset()
) -> tuple[dict[str, float], int, dict[str, int]]:
    """``(numbers by dotted name, how many leaves were no numbers, the names that came twice
    with how many numbers each had)`` of a nested mapping (``skip``: top-level keys left out).
    A name that comes twice (a dotted key and a nested one, ``{"a.b": 1, "a": {"b": 2}}``,
    name one series) is none of the numbers: neither value is kept."""
    out: dict[str, float] = {}
    others = 0
    leaves: dict[str, int] = {}  # how many leaves had each name
    numeric: dict[str, int] = {}  # how many of them were numbers
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
                numeric[name] = numeric.get(name, 0) + 1
            elif isinstance(value, Mapping):
                stack.append((name + ".", value, nothing))
                continue
            else:
                others += 1
            leaves[name] = leaves.get(name, 0) + 1
    twice = {name: numeric.get(name, 0) for name, n in sorted(leaves.items()) if n > 1}
    for name in twice:
        out.pop(name, None)
    return out, others, twice


class SeriesIngest:
    """Numbers one run's series and adds the points of its lifecycle lines to its batches.

    ``metrics``: each key of ``values`` (dotted names) at ``step``; without an integer ``step``,
    and for a value that is no number, refused. A worker's own event: each numeric payload
    field as ``<event>/<field>`` at the first of :data:`X_KEYS`, else the event's ordinal. Past
    :data:`MAX_SERIES` series or :data:`MAX_NAME_CHARS` characters, refused (warned once).

    The emitter's rules hold for any worker's lines: a step outside 0 .. 2**53
    (:data:`~mosaic_sdk.telemetry.emitter.MAX_STEP`), or an ``agent_id`` that is no non-empty
    string, refuses the line's values; a name that comes twice in one line (a dotted key and a
    nested one) refuses that name's values (each warned once a run, counted always). A line
    without a time stamp of 0 .. 2**63-1 ns gets the time it was read. ``-0.0`` keeps its sign
    (the store notes it: SQLite keeps no sign of zero)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.ids: dict[tuple[str, str | None], int] = {}
        self.ordinals: dict[str, int] = {}
        self.points = 0
        self.refused = 0
        self._told_limit = False
        self._told: set[str] = set()

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
        twice: Mapping[str, int] = _NONE_TWICE
        for value in values.values():
            if type(value) is not float:
                numbers, others, twice = flatten(values)
                others += sum(twice.values())  # refused with the leaves that are no numbers
                break
        step = payload.get("step")
        if type(step) is not int or not 0 <= step <= MAX_STEP:
            step = whole(step)
            if step is None:
                self._refuse(batch, len(numbers) + others)
                return
            if not 0 <= step <= MAX_STEP:
                self._refuse(batch, len(numbers) + others)
                self._bad_step(line_no, step)
                return
        agent = payload.get("agent_id")
        if agent is not None and not _agent_id(agent):
            self._refuse(batch, len(numbers) + others)
            self._bad_agent(line_no, agent)
            return
        if others:
            self._refuse(batch, others)
        if twice:
            self._twice(line_no, twice)
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
            step = whole(payload.get(key))
            if step is not None:
                break
        numbers, _, twice = flatten(payload, f"{name}/", skip=frozenset(X_KEYS))
        if step is not None and not 0 <= step <= MAX_STEP:
            self._refuse(batch, len(numbers))
            if numbers:
                self._bad_step(line_no, step)
            return
        agent = d.get("agent_id")
        if not _agent_id(agent):
            self._refuse(batch, len(numbers))
            if numbers:
                self._bad_agent(line_no, agent)
            return
        if twice:  # (the leaves that are no numbers are the event's, not series)
            self._refuse(batch, sum(twice.values()))
            self._twice(line_no, twice)
        if not numbers:
            return
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

    def _tell(self, kind: str, message: str) -> None:
        """Warn ``message`` the first time this run's values are refused for ``kind``."""
        if kind in self._told:
            return
        self._told.add(kind)
        current_reporter().warn(
            f"run {self.run_id} {message}; refused and counted (`mosaic runs show` says how "
            "many), further ones without a word"
        )

    def _bad_step(self, line_no: int, step: int) -> None:
        self._tell(
            "step",
            f"line {line_no}: step {step} is outside 0 .. 2**53 (the emitter's rule: what a "
            "float64 chart column holds exactly); the line's values are",
        )

    def _bad_agent(self, line_no: int, agent: object) -> None:
        shown = repr(agent)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        self._tell(
            "agent",
            f"line {line_no}: agent_id {shown} is no non-empty string (the emitter's rule); "
            "the line's values are",
        )

    def _twice(self, line_no: int, names: Mapping[str, int]) -> None:
        name = next(iter(names))
        shown = repr(name if len(name) <= 80 else name[:77] + "...")
        self._tell(
            "twice",
            f"line {line_no}: the name {shown} comes twice in one line (a dotted key and a "
            "nested one name the same series: report one of them); its values are",
        )

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
        if type(wall) is not int or not 0 <= wall <= _INT64_MAX:
            wall = integer_step(wall)
            if wall is None or wall < 0:  # no time stamp (the emitter writes none below 0)
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
            if not value and math.copysign(1.0, value) < 0:  # -0.0: SQLite stores 0
                batch.negative_zeros.append((run_id, sid, step, wall, line_no))
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
