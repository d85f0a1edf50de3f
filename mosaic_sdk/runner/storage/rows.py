"""Rows for the store: the batch of one transaction, and making any row storable.

A worker can write valid JSON that SQLite cannot bind (an integer of 400 digits, a lone
surrogate). When a batch fails, the writer inserts :func:`storable` rows instead: what does not
fit a column becomes NULL (``raw`` keeps the line), and a row that cannot be converted at all
becomes an ``unstored`` log line holding the raw line and the reason.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, cast

from mosaic_sdk.runner.storage import schema as store_sql
from mosaic_sdk.runner.storage.records import (
    EpisodeValues,
    EventValues,
    LogValues,
    PointValues,
    SeriesValues,
    TelemetryValues,
)
from mosaic_sdk.runner.storage.summary import add_points as add_summary

_INT64 = (-(2**63), 2**63 - 1)

#: ``log_lines.kind`` of a line kept raw because its row could not be stored in its table.
UNSTORED = "unstored"


@dataclass(slots=True, eq=False)
class LineBatch:
    """Rows for one transaction, and what they add to the run's counters."""

    serial: int = 0
    steps: list[TelemetryValues] = field(default_factory=list)
    #: episode rows: a step row's values and the ``unfinished`` flag (0 or 1)
    episodes: list[EpisodeValues] = field(default_factory=list)
    events: list[EventValues] = field(default_factory=list)
    logs: list[LogValues] = field(default_factory=list)
    #: series first seen in this batch, and series points (not rows of a line: they are not
    #: counted in ``len``); values refused as points (counted only)
    series: list[SeriesValues] = field(default_factory=list)
    points: list[PointValues] = field(default_factory=list)
    #: the keys (run_id, series_id, step, wall_ns, line_no) of the points whose value is -0.0
    negative_zeros: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    refused: int = 0
    lines: int = 0  # stdout lines in this batch
    invalid: int = 0
    stderr: int = 0
    #: the return of the batch's last finished episode with a finite one
    last_return: float | None = None
    first_at: float | None = None

    def __len__(self) -> int:
        return len(self.steps) + len(self.episodes) + len(self.events) + len(self.logs)

    def absorb(self, later: LineBatch) -> None:
        """Append the rows and counts of a batch that came after this one."""
        for rows in ("steps", "episodes", "events", "logs", "series", "points", "negative_zeros"):
            getattr(self, rows).extend(getattr(later, rows))
        self.refused += later.refused
        self.lines += later.lines
        self.invalid += later.invalid
        self.stderr += later.stderr
        if later.last_return is not None:
            self.last_return = later.last_return
        self.serial = max(self.serial, later.serial)


def finite_float(value: object) -> float | None:
    """``float(value)`` for an int or float that has a finite one, else None (never raises)."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:
            return None
        return out if math.isfinite(out) else None
    return None


def number(value: object) -> int | float | None:
    """A value SQLite binds in a numeric column, else None (the raw line keeps it)."""
    if value is None or type(value) is float:
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return int(value) if _INT64[0] <= value <= _INT64[1] else finite_float(value)
    if isinstance(value, float):
        return float(value)
    return None


def text(value: object) -> str:
    """A string SQLite binds (lone surrogates become ``\\udXXX`` escapes); never raises."""
    if type(value) is not str:
        try:
            value = str(value)
        except Exception:  # noqa: BLE001 - a broken __str__ must not cost the row
            return f"<unprintable {type(value).__name__}>"
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def optional_text(value: object) -> str | None:
    return None if value is None else text(value)


def _telemetry_row(row: TelemetryValues) -> TelemetryValues:
    # steps and episodes: run_id, line_no, then seven numeric columns, raw, agent_id (and
    # an episode's unfinished flag, an int the ingest made)
    numbers = tuple(map(number, row[2:9]))
    fixed = (*row[:2], *numbers, text(row[9]), optional_text(row[10]), *row[11:])
    return cast(TelemetryValues, fixed)


def _event_row(row: EventValues) -> EventValues:
    run_id, line_no, seq, name, ts, synthesised, payload, raw = row
    fixed = (number(seq), text(name), number(ts), synthesised, optional_text(payload), text(raw))
    return (run_id, line_no, *fixed)


def _log_row(row: LogValues) -> LogValues:
    run_id, stream, line_no, kind, partial, error, body = row
    return (run_id, stream, line_no, text(kind), partial, optional_text(error), text(body))


def _unstored(run_id: str, line_no: int, table: str, raw: object, exc: BaseException) -> LogValues:
    reason = text(f"not storable as a {table} row: {type(exc).__name__}: {exc}")
    return (run_id, "stdout", line_no, UNSTORED, 0, reason, text(raw))


def storable(batch: LineBatch) -> tuple[LineBatch, int]:
    """A copy of ``batch`` whose rows all bind, and how many rows became raw log lines."""
    out = LineBatch(batch.serial)
    out.lines, out.invalid, out.stderr = batch.lines, batch.invalid, batch.stderr
    # the ingest builds series and points from values that always bind
    out.series, out.points, out.refused = batch.series, batch.points, batch.refused
    out.negative_zeros = batch.negative_zeros
    out.last_return = finite_float(batch.last_return)
    degraded = 0
    targets: list[tuple[Sequence[TelemetryValues], list[TelemetryValues], str]] = [
        (batch.steps, out.steps, "step"),
        (
            cast(list[TelemetryValues], batch.episodes),
            cast(list[TelemetryValues], out.episodes),
            "episode",
        ),
    ]
    for rows, target, table in targets:
        for row in rows:
            try:
                target.append(_telemetry_row(row))
            except Exception as exc:  # noqa: BLE001 - keep the raw line whatever went wrong
                out.logs.append(_unstored(row[0], row[1], table, row[9], exc))
                degraded += 1
    for event in batch.events:
        try:
            out.events.append(_event_row(event))
        except Exception as exc:  # noqa: BLE001 - keep the raw line whatever went wrong
            out.logs.append(_unstored(event[0], event[1], "event", event[7], exc))
            degraded += 1
    out.logs.extend(_log_row(row) for row in batch.logs)
    return out, degraded


#: Row counts of the multi-row INSERT statements (a few shapes, so SQLite's statement cache
#: keeps them compiled); fewer rows than the smallest go through executemany.
_BLOCKS = (256, 128, 64, 32, 16)
_multi_row_sql: dict[tuple[str, int], str] = {}

# Binding None, True or False costs Python's sqlite3 an adapter lookup, about 8x binding an
# int, and a step row has three (terminated, truncated, agent_id). So the blocks bind them as
# exact ints: a boolean as the 0 or 1 SQLite stores anyway, and the None of a text-or-NULL
# column as 0, turned back into NULL by ``nullif(?, 0)`` (an integer never equals a text).
#: Per statement: its row width, its boolean columns, and its text-or-NULL columns.
_INT_BOUND: dict[str, tuple[int, tuple[int, ...], tuple[int, ...]]] = {
    store_sql.INSERT_STEP: (11, (6, 7), (10,)),
    store_sql.INSERT_EPISODE: (12, (6, 7), (10,)),
    store_sql.INSERT_LOG: (7, (), (5,)),
}


def _block_sql(sql: str, block: int) -> str:
    """The multi-row statement of ``block`` rows of ``sql`` (see _INT_BOUND)."""
    head, sep, group = sql.rpartition("VALUES ")
    shape = _INT_BOUND.get(sql)
    if shape is not None:
        width, _, texts = shape
        marks = ["nullif(?, 0)" if i in texts else "?" for i in range(width)]
        group = "(" + ", ".join(marks) + ")"
    return head + sep + ", ".join([group] * block)


def _block_params(sql: str, rows: Sequence[tuple[object, ...]]) -> list[object]:
    """The parameters of a block of ``rows``, flat (see _INT_BOUND)."""
    flat = list(chain.from_iterable(rows))
    shape = _INT_BOUND.get(sql)
    if shape is not None:
        width, bools, texts = shape
        for column in bools:
            flat[column::width] = [
                1 if v is True else 0 if v is False else v for v in flat[column::width]
            ]
        for column in texts:
            flat[column::width] = [0 if v is None else v for v in flat[column::width]]
    return flat


def insert_rows(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
    """``executemany(sql, rows)`` as multi-row ``INSERT ... VALUES (...), (...)`` blocks (one
    ``sqlite3_step`` per block, without the GIL: about 30% less CPU per row). ``sql`` must end
    with its one ``VALUES (?, ...)`` group."""
    start, total = 0, len(rows)
    for block in _BLOCKS:
        while total - start >= block:
            multi = _multi_row_sql.get((sql, block))
            if multi is None:
                multi = _multi_row_sql[sql, block] = _block_sql(sql, block)
            conn.execute(multi, _block_params(sql, rows[start : start + block]))
            start += block
    if start < total:
        conn.executemany(sql, rows[start:])


def insert_series(conn: sqlite3.Connection, run_id: str, batch: LineBatch) -> None:
    """Insert the batch's new series and points, add each series' summary to its row and
    the counts to the run's (inside a transaction; nothing when the batch has none)."""
    if batch.series:
        conn.executemany(store_sql.INSERT_SERIES, batch.series)
    points = batch.points
    if points:
        add_summary(conn, run_id, points)  # the series' block summaries (summary.py)
        insert_rows(conn, store_sql.INSERT_POINT, points)
        if batch.negative_zeros:
            conn.executemany(store_sql.INSERT_NEGATIVE_ZERO, batch.negative_zeros)
        # per series: (points, first step, last step, last value, last wall time)
        summary: dict[int, list[int | float]] = {}
        for _, sid, step, wall, _, value in points:
            s = summary.get(sid)
            if s is None:
                summary[sid] = [1, step, step, value, wall]
                continue
            s[0] += 1
            if step < s[1]:
                s[1] = step
            if step > s[2] or (step == s[2] and wall >= s[4]):
                s[2], s[3], s[4] = step, value, wall
        conn.executemany(
            store_sql.UPDATE_SERIES,
            [
                (n, first, last, value, wall, run_id, sid)
                for sid, (n, first, last, value, wall) in summary.items()
            ],
        )
    if points or batch.refused:
        conn.execute(store_sql.UPDATE_SERIES_COUNTS, (len(points), batch.refused, run_id))


def insert_batch(conn: sqlite3.Connection, run_id: str, batch: LineBatch) -> None:
    """Insert the rows of ``batch`` and add them to the run's counters (inside a transaction)."""
    insert_rows(conn, store_sql.INSERT_STEP, batch.steps)
    insert_rows(conn, store_sql.INSERT_EPISODE, batch.episodes)
    insert_rows(conn, store_sql.INSERT_EVENT, batch.events)
    insert_rows(conn, store_sql.INSERT_LOG, batch.logs)
    insert_series(conn, run_id, batch)
    cut = sum(row[11] for row in batch.episodes)
    episodes = (len(batch.episodes) - cut, cut)
    counts = (len(batch.steps), *episodes, len(batch.events), len(batch.logs))
    _add_counts(conn, run_id, batch, (*counts, batch.stderr))


def _add_counts(
    conn: sqlite3.Connection, run_id: str, batch: LineBatch, counts: tuple[int, ...]
) -> None:
    """Add ``counts`` (the stored steps, finished and unfinished episodes, events, log lines
    and stderr lines of ``batch``) and its lines to the run's counters."""
    steps, episodes, unfinished, events, logs, stderr = counts
    params = (batch.lines, steps, episodes, unfinished, events, logs, batch.invalid, stderr)
    conn.execute(store_sql.UPDATE_COUNTS, (*params, batch.last_return, run_id))


def insert_each(
    conn: sqlite3.Connection, run_id: str, batch: LineBatch, kept: LineBatch | None = None
) -> tuple[int, int, Exception | None]:
    """:func:`insert_batch` one row at a time, for a batch a table refused (a duplicate
    key...): a refused row becomes an ``unstored`` log line, or is lost when that is refused
    too. Returns (rows degraded, rows lost, the last error); ``sqlite3.OperationalError``
    (locked, full) is raised. ``kept`` receives the step and episode rows stored."""
    stored = {"steps": 0, "episodes": 0, "unfinished": 0, "events": 0, "stdout": 0, "stderr": 0}
    degraded = lost = 0
    try:
        conn.execute("SAVEPOINT series")
        insert_series(conn, run_id, batch)  # built by the ingest to bind, and keyed apart
        conn.execute("RELEASE series")
        if kept is not None:
            kept.series, kept.points, kept.refused = batch.series, batch.points, batch.refused
    except sqlite3.OperationalError:
        raise
    except Exception:  # noqa: BLE001 - never seen: the points are refused, the lines kept
        conn.execute("ROLLBACK TO series")
        conn.execute("RELEASE series")
        refused = len(batch.points) + batch.refused
        conn.execute(store_sql.UPDATE_SERIES_COUNTS, (0, refused, run_id))
    last: Exception | None = None
    tables: list[tuple[Sequence[tuple[Any, ...]], str, str, int]] = [
        (batch.steps, store_sql.INSERT_STEP, "steps", 9),
        (batch.episodes, store_sql.INSERT_EPISODE, "episodes", 9),
        (batch.events, store_sql.INSERT_EVENT, "events", 7),
        (batch.logs, store_sql.INSERT_LOG, "logs", 6),
    ]
    for rows, sql, key, raw_at in tables:
        for row in rows:
            try:
                conn.execute(sql, row)
                if key == "episodes" and row[11]:
                    stored["unfinished"] += 1
                else:
                    stored[str(row[1]) if key == "logs" else key] += 1
                if kept is not None and key in ("steps", "episodes"):
                    getattr(kept, key).append(row)
                continue
            except sqlite3.OperationalError:
                raise
            except Exception as exc:  # noqa: BLE001 - this row only
                last = exc
            if key != "logs":
                try:
                    conn.execute(
                        store_sql.INSERT_LOG,
                        # a step, episode or event row: row[1] is its line_no
                        _unstored(row[0], cast(int, row[1]), key.rstrip("s"), row[raw_at], last),
                    )
                    stored["stdout"] += 1
                    degraded += 1
                    continue
                except sqlite3.OperationalError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    last = exc
            lost += 1
    logs = stored["stdout"] + stored["stderr"]
    episodes = (stored["episodes"], stored["unfinished"])
    counts = (stored["steps"], *episodes, stored["events"], logs, stored["stderr"])
    _add_counts(conn, run_id, batch, counts)
    return degraded, lost, last
