"""Block summaries of series: what lets a picture of a long series be read at the cost of its
width in pixels, not of its points (written by :func:`add_points`, read by :func:`cover`).
"""

from __future__ import annotations

import math
import operator
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby, islice
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Points per level-1 block, blocks per block of the next level, and the levels kept. A
#: series' points, in key order, are cut into blocks of 16, 64 ... 65,536 points; only complete
#: blocks are stored (``series_blocks``: the keys of the first and last point, the count and sum
#: of the finite values, the lowest and highest finite point). A point that comes before its
#: series' last one turns the series' summary off (``series.summarised = 0``): then it is read
#: by scanning, as is a store opened read-only that predates the blocks.
LEAF = 16
FANOUT = 4
LEVELS = 7

_MIN = -(2**63)
_MAX = 2**63 - 1

#: Migration to version 7: the blocks table. ``series.summarised`` (1: the series' blocks
#: are kept; 0: its points came out of key order, it is read by scanning) is added to the
#: ``series`` table beside it.
BLOCKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS series_blocks (
    run_id TEXT NOT NULL,
    series_id INTEGER NOT NULL,
    level INTEGER NOT NULL,
    first_step INTEGER NOT NULL,
    first_wall INTEGER NOT NULL,
    first_line INTEGER NOT NULL,
    last_step INTEGER NOT NULL,
    last_wall INTEGER NOT NULL,
    last_line INTEGER NOT NULL,
    finite INTEGER NOT NULL,
    total REAL NOT NULL,
    min_value REAL,
    min_step INTEGER,
    min_wall INTEGER,
    max_value REAL,
    max_step INTEGER,
    max_wall INTEGER,
    PRIMARY KEY (run_id, series_id, level, first_step, first_wall, first_line)
) WITHOUT ROWID;
"""
SERIES_COLUMNS = {"summarised": "INTEGER NOT NULL DEFAULT 1"}

_BLOCK_FIELDS = (
    "first_step, first_wall, first_line, last_step, last_wall, last_line, finite, total,"
    " min_value, min_step, min_wall, max_value, max_step, max_wall"
)
_INSERT_BLOCK = (
    f"INSERT INTO series_blocks (run_id, series_id, level, {_BLOCK_FIELDS})"
    f" VALUES ({', '.join('?' * 17)})"
)
_LAST_BLOCKS = (
    f"SELECT {_BLOCK_FIELDS} FROM series_blocks WHERE run_id = ? AND series_id = ?"
    " AND level = ? ORDER BY first_step DESC, first_wall DESC, first_line DESC LIMIT ?"
)
_LAST_POINTS = (
    "SELECT run_id, series_id, step, wall_ns, line_no, value FROM series_points"
    " WHERE run_id = ? AND series_id = ?"
    " ORDER BY step DESC, wall_ns DESC, line_no DESC LIMIT ?"
)
#: The blocks of one level (:level) whose keys lie in [:a, :b] (first key from :a, last key
#: up to :b): the filter of the read queries below.
_IN = (
    " FROM series_blocks WHERE run_id = :run AND series_id = :sid AND level = :level"
    " AND (first_step, first_wall, first_line) >= (:a0, :a1, :a2)"
    " AND (first_step, first_wall, first_line) <= (:b0, :b1, :b2)"
    " AND (last_step, last_wall, last_line) <= (:b0, :b1, :b2)"
)
_FITS = "last_step - first_step < :width"
#: Of those blocks: how many fit a bucket and their finite values; the key of the first;
#: the key of the last; and the keys of those too wide for a bucket (whose points go further
#: down), in key order.
_FITTING = f"SELECT count(*), total(finite){_IN} AND {_FITS}"
_FIRST = f"SELECT first_step, first_wall, first_line{_IN} ORDER BY first_step, first_wall,"
_FIRST += " first_line LIMIT 1"
_LAST = f"SELECT last_step, last_wall, last_line{_IN} ORDER BY first_step DESC, first_wall DESC,"
_LAST += " first_line DESC LIMIT 1"
_WIDE = (
    f"SELECT first_step, first_wall, first_line, last_step, last_wall, last_line{_IN}"
    f" AND NOT {_FITS} ORDER BY first_step, first_wall, first_line"
)
#: Per bucket (of the point's own step), the lowest and the highest finite point of the
#: blocks that fit one (SQLite takes the bare columns from the row of the one min or max).
_LOWS = (
    "SELECT min_step, min(min_value), min_wall" + _IN + f" AND {_FITS} AND min_value IS NOT NULL"
    " GROUP BY CAST((min_step - :lo) / :width AS INTEGER)"
)
_HIGHS = (
    "SELECT max_step, max(max_value), max_wall" + _IN + f" AND {_FITS} AND max_value IS NOT NULL"
    " GROUP BY CAST((max_step - :lo) / :width AS INTEGER)"
)
#: Per bucket (of the block's middle step): the sum of the finite values, how many, and the
#: sum of their steps (each block's counted at its middle).
_SUMS = (
    "SELECT CAST(((first_step + last_step) / 2.0 - :lo) / :width AS INTEGER) AS b,"
    " total(total), total(finite), total(finite * ((first_step + last_step) / 2.0))"
    + _IN
    + f" AND {_FITS} AND finite > 0 GROUP BY b"
)
_RAW_FIELDS = [("step", "<i8"), ("value", "<f8"), ("wall", "<i8")]
_POINTS_IN = (
    "SELECT step, ifnull(value, 'nan'), wall_ns FROM series_points"
    " WHERE run_id = ? AND series_id = ? AND (step, wall_ns, line_no) >= (?, ?, ?)"
    " AND (step, wall_ns, line_no) <= (?, ?, ?) ORDER BY step, wall_ns, line_no"
)

#: A block as stored (without run, series and level): see ``_BLOCK_FIELDS``.
Block = tuple[Any, ...]
#: A point of a series as the writer has it: (run_id, series_id, step, wall_ns, line_no,
#: value); value None is NaN (as SQLite has it).
Point = tuple[Any, ...]
_SERIES = operator.itemgetter(1)


def points_per_block(level: int) -> int:
    return LEAF * FANOUT ** (level - 1)


def _leaf(points: Sequence[Point]) -> Block:
    """The level-1 block of ``points``: rows ``(run_id, series_id, step, wall_ns, line_no,
    value)`` in key order (``value`` None or non-finite: not counted as finite)."""
    first, last = points[0], points[-1]
    values = [p[5] for p in points]
    try:
        total = sum(values)
    except TypeError:  # a None (NaN as SQLite keeps it) among them
        total = math.nan
    if math.isfinite(total):  # every value finite (the usual block): found in C
        at = range(len(values)).__iter__
        low = points[min(at(), key=values.__getitem__)]
        high = points[max(at(), key=values.__getitem__)]
        return (
            *first[2:5], *last[2:5], len(values), total,
            low[5], low[2], low[3], high[5], high[2], high[3],
        )  # fmt: skip
    finite, total = 0, 0.0
    lo: Point | None = None
    hi: Point | None = None
    for p in points:
        value = p[5]
        if value is None or not math.isfinite(value):
            continue
        finite += 1
        total += value
        if lo is None or value < lo[5]:
            lo = p
        if hi is None or value > hi[5]:
            hi = p
    return (
        *first[2:5],
        *last[2:5],
        finite,
        total,
        *((lo[5], lo[2], lo[3]) if lo is not None else (None, None, None)),
        *((hi[5], hi[2], hi[3]) if hi is not None else (None, None, None)),
    )


def _parent(children: Sequence[Block]) -> Block:
    low: Block | None = None
    high: Block | None = None
    for child in children:
        if child[8] is not None and (low is None or child[8] < low[8]):
            low = child
        if child[11] is not None and (high is None or child[11] > high[11]):
            high = child
    return (
        *children[0][:3],
        *children[-1][3:6],
        sum(c[6] for c in children),
        sum(c[7] for c in children),
        *(low[8:11] if low is not None else (None, None, None)),
        *(high[11:14] if high is not None else (None, None, None)),
    )


def _blocks_of(items: Sequence[Any], size: int, make: Any) -> list[Block]:
    return [make(items[i : i + size]) for i in range(0, len(items) - size + 1, size)]


@dataclass
class _Open:
    """Where a series' next blocks start: its points so far, its last point, its points not
    yet in a level-1 block, and per level (1 to LEVELS - 1) its blocks not yet in a parent."""

    count: int
    last: Point | None
    raw: list[Point]
    blocks: list[list[Block]]


class Connection(sqlite3.Connection):
    """A writer's connection to the store (:func:`~.schema.connect`): it keeps each series'
    :class:`_Open` state between batches, so a batch that completes no block costs the
    summary one query (the series' point counts, which tell a kept state from one a rolled
    back transaction left behind)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_series: dict[tuple[str, int], _Open] = {}


def _open_of(conn: sqlite3.Connection, run_id: str, series_id: int, count: int) -> _Open:
    """A series' :class:`_Open` state as the store has it (``count``: its points)."""
    rows = conn.execute(_LAST_POINTS, (run_id, series_id, max(1, count % LEAF))).fetchall()
    blocks = []
    for level in range(1, LEVELS):
        n = (count // points_per_block(level)) % FANOUT
        got = conn.execute(_LAST_BLOCKS, (run_id, series_id, level, n)).fetchall() if n else []
        blocks.append(got[::-1])
    return _Open(count, rows[0] if rows else None, rows[::-1] if count % LEAF else [], blocks)


def _advance(
    conn: sqlite3.Connection, run_id: str, series_id: int, state: _Open, new: list[Point]
) -> None:
    """Add ``new`` points (in key order, after ``state.last``) to ``state`` and insert the
    blocks they complete, level by level."""
    pending = state.raw + new if state.raw else new
    fresh = _blocks_of(pending, LEAF, _leaf)
    state.raw = pending[len(fresh) * LEAF :]
    state.last = new[-1]
    state.count += len(new)
    level = 1
    while fresh:
        conn.executemany(_INSERT_BLOCK, [(run_id, series_id, level, *b) for b in fresh])
        if level == LEVELS:
            return
        waiting = state.blocks[level - 1] + fresh
        fresh = _blocks_of(waiting, FANOUT, _parent)
        state.blocks[level - 1] = waiting[len(fresh) * FANOUT :]
        level += 1


def plain_cursor(conn: sqlite3.Connection) -> Any:
    """A cursor of ``conn`` that reads rows as tuples (a RunStore's connection reads dicts)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor


def add_points(conn: sqlite3.Connection, run_id: str, points: Sequence[Point]) -> None:
    """The store writer's hook: add the blocks that a batch's points complete (``points``:
    ``(run_id, series_id, step, wall_ns, line_no, value)`` rows, in the order they came; called
    in the batch's transaction, after its new series rows and before its points are inserted).
    A series whose points come out of key order is marked ``summarised = 0`` (see the module
    docstring)."""
    if not points:
        return
    first_sid = points[0][1]
    if all(p[1] == first_sid for p in points):  # one series (a quiet run's batch)
        by_series: dict[int, list[Point]] = {first_sid: list(points)}
    else:  # rows of one run: ordered as their series ids, then as they came (a stable sort)
        by_series = {
            sid: list(rows) for sid, rows in groupby(sorted(points, key=_SERIES), key=_SERIES)
        }
    ids = "[" + ",".join(str(int(i)) for i in by_series) + "]"
    kept = conn.open_series if isinstance(conn, Connection) else {}
    conn = plain_cursor(conn)
    state = {
        sid: (count, on)
        for sid, count, on in conn.execute(
            "SELECT s.series_id, s.points, s.summarised FROM json_each(?) AS j"
            " JOIN series AS s ON s.run_id = ? AND s.series_id = j.value",
            (ids, run_id),
        )
    }
    for sid, new in by_series.items():
        count, on = state.get(sid, (0, 0))
        if not on:
            continue
        series = kept.get((run_id, sid))
        if series is None or series.count != count:
            series = kept[run_id, sid] = _open_of(conn, run_id, sid, count)
        # rows of one run and series compare as their keys (step, wall time, line)
        ordered = all(map(operator.lt, new, islice(new, 1, None)))
        if ordered and series.last is not None:
            ordered = series.last < new[0]
        if not ordered:
            del kept[run_id, sid]
            conn.execute(
                "UPDATE series SET summarised = 0 WHERE run_id = ? AND series_id = ?",
                (run_id, sid),
            )
            conn.execute(
                "DELETE FROM series_blocks WHERE run_id = ? AND series_id = ?", (run_id, sid)
            )
            continue
        _advance(conn, run_id, sid, series, new)


def build_all(conn: sqlite3.Connection) -> None:
    """Build the blocks of every series of the store (the migration to version 7: the
    points are read in key order, so every series gets them, in whatever order its points
    came)."""
    conn = plain_cursor(conn)
    series = conn.execute("SELECT run_id, series_id FROM series").fetchall()
    for run_id, sid in series:
        rows = conn.execute(
            "SELECT run_id, series_id, step, wall_ns, line_no, value FROM series_points"
            " WHERE run_id = ? AND series_id = ? ORDER BY step, wall_ns, line_no",
            (run_id, sid),
        ).fetchall()
        if rows:
            _advance(conn, run_id, sid, _Open(0, None, [], [[] for _ in range(1, LEVELS)]), rows)
        conn.execute(
            "UPDATE series SET summarised = 1 WHERE run_id = ? AND series_id = ?", (run_id, sid)
        )


@dataclass(frozen=True, eq=False)
class SeriesMeans:
    """A series at a picture's resolution (:meth:`RunStore.series_means`): the mean of the
    finite values of each of ``buckets`` equal step ranges that holds one, at the mean step
    of its values (``steps``, float64), with ``counts``: how many values each mean is of.
    ``points`` and ``not_finite`` count the whole series (NaN and infinities are in no
    mean). A range's mean is of its points up to one block (narrower than the range, see
    :mod:`~mosaic_sdk.runner.storage.summary`) from its edges."""

    name: str
    agent_id: str | None
    steps: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    points: int
    not_finite: int
    buckets: int

    def __len__(self) -> int:
        return len(self.steps)


@dataclass
class Cover:
    """A step range of a series cut into ``buckets`` equal step ranges, read as whole blocks
    and raw points (see :func:`cover`)."""

    #: the blocks' lowest and highest finite points, a lowest and a highest per bucket
    #: (numpy: ``step``, ``value``, ``wall``; empty unless asked for)
    extremes: np.ndarray
    #: per bucket: the blocks' finite values' sum, their number, and the sum of their
    #: (blocks' middle) steps (empty unless asked for)
    sums: np.ndarray
    counts: np.ndarray
    steps: np.ndarray
    #: the raw points (numpy: ``step``, ``value``, ``wall``)
    raw: np.ndarray
    #: points in the range, and those of them NaN or infinite
    points: int
    not_finite: int

    @classmethod
    def of_points(cls, steps: np.ndarray, values: np.ndarray, walls: np.ndarray) -> Cover:
        """Points read whole, as a cover without blocks."""
        import numpy as np  # only here: `mosaic` commands start without numpy

        raw = np.zeros(len(steps), dtype=_RAW_FIELDS)
        raw["step"], raw["value"], raw["wall"] = steps, values, walls
        none = np.zeros(0)
        extremes = np.zeros(0, dtype=_RAW_FIELDS)
        return cls(extremes, none, none, none, raw, len(raw), int((~np.isfinite(values)).sum()))


def top_level(points: int, buckets: int) -> int:
    """The coarsest level whose blocks hold at most a bucket's share of ``points``."""
    level = 1
    while level < LEVELS and points_per_block(level + 1) * buckets <= points:
        level += 1
    return level


Key = tuple[int, int, int]


def bucket_of(steps: np.ndarray, lo: int, width: float, buckets: int) -> np.ndarray:
    """The bucket of each step: ``(step - lo) / width`` truncated (as SQLite's ``CAST(... AS
    INTEGER)`` of the same doubles), within [0, buckets)."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    at = (np.asarray(steps) - lo) / width
    return np.clip(at.astype(np.int64), 0, buckets - 1)


def cover(
    conn: sqlite3.Connection | sqlite3.Cursor,
    run_id: str,
    series_id: int,
    steps: tuple[int, int],
    buckets: int,
    top: int,
    *,
    means: bool = False,
) -> Cover:
    """Steps [lo, hi] of a series cut into ``buckets`` equal step ranges: the blocks whose
    steps span less than a bucket, from level ``top`` down, reduced inside SQLite to each
    bucket's lowest and highest point (``means``: to each bucket's sums), and the raw
    points no such block covers. Call inside one read transaction (one snapshot)."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    lo, hi = steps
    width = (hi + 1 - lo) / buckets
    intervals: list[tuple[Key, Key]] = [((lo, _MIN, _MIN), (hi, _MAX, _MAX))]
    extremes: list[list[Any]] = []
    sums, counts, at = np.zeros((3, buckets))
    points = not_finite = 0
    for level in range(top, 0, -1):
        later: list[tuple[Key, Key]] = []
        size = points_per_block(level)
        for start, end in intervals:
            params = {"run": run_id, "sid": series_id, "level": level, "width": width, "lo": lo}
            params.update(zip(("a0", "a1", "a2", "b0", "b1", "b2"), (*start, *end), strict=True))
            first = conn.execute(_FIRST, params).fetchone()
            if first is None:
                later.append((start, end))
                continue
            fits, finite = conn.execute(_FITTING, params).fetchone()
            if fits:
                points += fits * size
                not_finite += fits * size - int(finite)
                if means:
                    for b, total, count, where in conn.execute(_SUMS, params):
                        b = min(max(int(b), 0), buckets - 1)
                        sums[b] += total
                        counts[b] += count
                        at[b] += where
                else:
                    extremes += conn.execute(_LOWS, params).fetchall()
                    extremes += conn.execute(_HIGHS, params).fetchall()
            # Between two blocks of a level there are no points: what goes further down is
            # the interval's head (before its first block), its blocks too wide for a
            # bucket, and its tail (after its last block)
            later.append((start, (first[0], first[1], first[2] - 1)))
            later += [((w[0], w[1], w[2]), (w[3], w[4], w[5])) for w in conn.execute(_WIDE, params)]
            last = conn.execute(_LAST, params).fetchone()
            later.append(((last[0], last[1], last[2] + 1), end))
        intervals = [(a, b) for a, b in later if a <= b]
    raw_parts = [
        np.array(
            conn.execute(_POINTS_IN, (run_id, series_id, *start, *end)).fetchall(),
            dtype=_RAW_FIELDS,
        )
        for start, end in intervals
    ]
    raw = np.concatenate(raw_parts) if raw_parts else np.zeros(0, dtype=_RAW_FIELDS)
    points += len(raw)
    not_finite += int((~np.isfinite(raw["value"])).sum())
    found = np.array([tuple(e) for e in extremes], dtype=_RAW_FIELDS)
    return Cover(found, sums, counts, at, raw, points, not_finite)


def extremes(part: Cover, lo: int, buckets: int, width: float) -> tuple[Any, Any, Any]:
    """In each bucket, the lowest and the highest of a :class:`Cover`'s candidates (its
    blocks' per-bucket extremes and its finite raw points): real points, in key order
    (``steps``, ``values``, ``wall_ns``)."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    raw = part.raw[np.isfinite(part.raw["value"])]
    found = np.concatenate([raw, part.extremes])
    if not len(found):
        return found["step"], found["value"], found["wall"]
    bucket = bucket_of(found["step"], lo, width, buckets)
    order = np.lexsort((found["value"], bucket))
    ends = np.flatnonzero(np.r_[bucket[order][1:] != bucket[order][:-1], True])
    starts = np.r_[0, ends[:-1] + 1] if len(ends) else ends
    keep = found[np.unique(np.concatenate([order[starts], order[ends]]))]
    keep = keep[np.lexsort((keep["wall"], keep["step"]))]
    return keep["step"], keep["value"], keep["wall"]


def means(part: Cover, lo: int, buckets: int, width: float) -> tuple[Any, Any, Any]:
    """Per bucket that holds a finite value: the mean step of its values (a block's counted
    at its middle step), their mean, and how many there are."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    raw = part.raw[np.isfinite(part.raw["value"])]
    bucket = bucket_of(raw["step"], lo, width, buckets)
    count = np.bincount(bucket, minlength=buckets).astype(np.float64)
    total = np.bincount(bucket, raw["value"], buckets)
    where = np.bincount(bucket, raw["step"].astype(np.float64), buckets)
    if len(part.counts):  # the blocks' sums (a cover read whole has none)
        count, total, where = count + part.counts, total + part.sums, where + part.steps
    has = count > 0
    return where[has] / count[has], total[has] / count[has], count[has]
