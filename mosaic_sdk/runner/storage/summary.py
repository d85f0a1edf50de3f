"""Block summaries of series (issue 32): what lets a picture of a long series be read at the
cost of its width in pixels, not of its points.

The points of one series, in key order (step, wall time, line), are cut into blocks of
:data:`LEAF` consecutive points (level 1); :data:`FANOUT` consecutive blocks of a level make
one block of the next, up to level :data:`LEVELS` (a level-``L`` block holds
``LEAF * FANOUT ** (L - 1)`` points: 16, 64, 256 ... 65,536). Only complete blocks are
stored, in ``series_blocks``: the keys of its first and last point, how many of its values
are finite, their sum, and its lowest and highest finite point (value, step, wall time; the
first of equal ones). NaN and infinities are counted (``points - finite``), never summed.

The store writer adds blocks in the transaction of the points (:func:`add_points`, called
with each batch before its points are inserted). That needs the points of a series to come
in key order (a step never smaller than the last one's, as every training loop reports);
the first point that comes before the series' last one turns its summary off
(``series.summarised = 0``, its blocks deleted) and that series is read by scanning its
points, as every series was before. A store made before the blocks (schema version 7) gets
them for every series when it is first opened for writing (:func:`build_all`); opened
read-only, it is read by scanning.

Reading (:func:`cover`): the step range asked for is covered by whole blocks narrower than a
bucket (a pixel column), coarsest first, and by the raw points of what no such block covers
(the partial blocks at the range's edges, the last incomplete block, blocks wider than a
bucket where points are sparse). :func:`extremes` keeps, in each bucket, the lowest and the
highest of those blocks' extreme points and raw points: real stored points, each at its own
step; a block lies in at most two buckets, so a bucket's kept extremes are those of its
points up to one block (narrower than the bucket) from its edges. :func:`means` gives each
bucket's mean from the blocks' sums and counts.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Points per level-1 block, blocks per block of the next level, and the levels kept.
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
    "SELECT step, wall_ns, line_no, value FROM series_points WHERE run_id = ? AND series_id = ?"
    " ORDER BY step DESC, wall_ns DESC, line_no DESC LIMIT ?"
)
#: The blocks of one level whose first key is in [?4..6, ?7..9], read into numpy
#: (:data:`_READ_FIELDS`: a block without a finite value reads NaN and step 0).
_BLOCKS_IN = (
    "SELECT first_step, first_wall, first_line, last_step, last_wall, last_line, finite,"
    " total, ifnull(min_value, 'nan'), ifnull(min_step, 0), ifnull(min_wall, 0),"
    " ifnull(max_value, 'nan'), ifnull(max_step, 0), ifnull(max_wall, 0), level"
    " FROM series_blocks WHERE run_id = ? AND series_id = ?"
    " AND level = ? AND (first_step, first_wall, first_line) >= (?, ?, ?)"
    " AND (first_step, first_wall, first_line) <= (?, ?, ?)"
    " ORDER BY first_step, first_wall, first_line"
)
_READ_FIELDS = [
    ("first_step", "<i8"),
    ("first_wall", "<i8"),
    ("first_line", "<i8"),
    ("last_step", "<i8"),
    ("last_wall", "<i8"),
    ("last_line", "<i8"),
    ("finite", "<i8"),
    ("total", "<f8"),
    ("min_value", "<f8"),
    ("min_step", "<i8"),
    ("min_wall", "<i8"),
    ("max_value", "<f8"),
    ("max_step", "<i8"),
    ("max_wall", "<i8"),
    ("level", "<i8"),
]
_RAW_FIELDS = [("step", "<i8"), ("value", "<f8"), ("wall", "<i8")]
_POINTS_IN = (
    "SELECT step, ifnull(value, 'nan'), wall_ns FROM series_points"
    " WHERE run_id = ? AND series_id = ? AND (step, wall_ns, line_no) >= (?, ?, ?)"
    " AND (step, wall_ns, line_no) <= (?, ?, ?) ORDER BY step, wall_ns, line_no"
)

#: A block as stored (without run, series and level): see ``_BLOCK_FIELDS``.
Block = tuple[Any, ...]
#: A point of a series: (step, wall_ns, line_no, value); value None is NaN (as SQLite has it).
Point = tuple[int, int, int, float | None]


def points_per_block(level: int) -> int:
    return LEAF * FANOUT ** (level - 1)


def _leaf(points: Sequence[Point]) -> Block:
    finite, total = 0, 0.0
    low: tuple[float, int, int] | None = None
    high: tuple[float, int, int] | None = None
    for step, wall, _, value in points:
        if value is None or not math.isfinite(value):
            continue
        finite += 1
        total += value
        if low is None or value < low[0]:
            low = (value, step, wall)
        if high is None or value > high[0]:
            high = (value, step, wall)
    first, last = points[0], points[-1]
    return (
        *first[:3],
        *last[:3],
        finite,
        total,
        *(low or (None, None, None)),
        *(high or (None, None, None)),
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


def _store_levels(
    conn: sqlite3.Connection, run_id: str, series_id: int, before: int, leaves: list[Block]
) -> None:
    """Insert ``leaves`` (the new level-1 blocks of a series that held ``before`` points
    before them) and the blocks of the levels above that they complete."""
    new, level = leaves, 1
    while new:
        size = points_per_block(level)
        if level < LEVELS:  # the level's blocks not yet in a parent, read before the new ones
            open_blocks = (before // size) % FANOUT
            older = (
                conn.execute(_LAST_BLOCKS, (run_id, series_id, level, open_blocks)).fetchall()
                if open_blocks
                else []
            )
        conn.executemany(_INSERT_BLOCK, [(run_id, series_id, level, *b) for b in new])
        if level == LEVELS:
            return
        pending = older[::-1] + new
        new = _blocks_of(pending, FANOUT, _parent)
        level += 1


def add_points(conn: sqlite3.Connection, run_id: str, points: Iterable[Sequence[Any]]) -> None:
    """The store writer's hook: add the blocks that a batch's points complete (``points``:
    ``(run_id, series_id, step, wall_ns, line_no, value)`` rows, in the order they came; called
    in the batch's transaction, after its new series rows and before its points are inserted).
    A series whose points come out of key order is marked ``summarised = 0`` (see the module
    docstring)."""
    by_series: dict[int, list[Point]] = {}
    for _, sid, step, wall, line, value in points:
        got = by_series.get(sid)
        if got is None:
            got = by_series[sid] = []
        got.append((step, wall, line, value))
    if not by_series:
        return
    ids = list(by_series)
    state = {
        sid: (count, on)
        for sid, count, on in conn.execute(
            "SELECT s.series_id, s.points, s.summarised FROM json_each(?) AS j"
            " JOIN series AS s ON s.run_id = ? AND s.series_id = j.value",
            ("[" + ",".join(str(int(i)) for i in ids) + "]", run_id),
        )
    }
    for sid, new in by_series.items():
        count, on = state.get(sid, (0, 0))
        if not on:
            continue
        ordered = all(a[:3] < b[:3] for a, b in zip(new, new[1:]))  # noqa: RUF007
        older: list[Point] = []
        if ordered and count:
            rows = conn.execute(_LAST_POINTS, (run_id, sid, max(1, count % LEAF))).fetchall()
            ordered = tuple(rows[0][:3]) < new[0][:3]
            older = rows[::-1] if count % LEAF else []
        if not ordered:
            conn.execute(
                "UPDATE series SET summarised = 0 WHERE run_id = ? AND series_id = ?",
                (run_id, sid),
            )
            conn.execute(
                "DELETE FROM series_blocks WHERE run_id = ? AND series_id = ?", (run_id, sid)
            )
            continue
        leaves = _blocks_of(older + new, LEAF, _leaf)
        if leaves:
            _store_levels(conn, run_id, sid, count, leaves)


def build_all(conn: sqlite3.Connection) -> None:
    """Build the blocks of every series of the store (the migration to version 7: the
    points are read in key order, so every series gets them, in whatever order its points
    came)."""
    series = conn.execute("SELECT run_id, series_id FROM series").fetchall()
    for run_id, sid in series:
        rows = conn.execute(
            "SELECT step, wall_ns, line_no, value FROM series_points"
            " WHERE run_id = ? AND series_id = ? ORDER BY step, wall_ns, line_no",
            (run_id, sid),
        ).fetchall()
        leaves = _blocks_of(rows, LEAF, _leaf)
        if leaves:
            _store_levels(conn, run_id, sid, 0, leaves)
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
    """A step range of a series as whole blocks and raw points (see :func:`cover`)."""

    #: the blocks used (numpy, fields of ``_READ_FIELDS``, ``level`` last)
    blocks: np.ndarray
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
        blocks = np.zeros(0, dtype=_READ_FIELDS)
        return cls(blocks, raw, len(raw), int((~np.isfinite(values)).sum()))


def top_level(points: int, buckets: int) -> int:
    """The coarsest level whose blocks hold at most a bucket's share of ``points``."""
    level = 1
    while level < LEVELS and points_per_block(level + 1) * buckets <= points:
        level += 1
    return level


Key = tuple[int, int, int]


def _key(block: Any, at: str) -> Key:
    return (int(block[f"{at}_step"]), int(block[f"{at}_wall"]), int(block[f"{at}_line"]))


def cover(
    conn: sqlite3.Connection | sqlite3.Cursor,
    run_id: str,
    series_id: int,
    lo: int,
    hi: int,
    width: float,
    top: int,
) -> Cover:
    """The points of steps [lo, hi] of a series as whole blocks whose steps span less than
    ``width`` (a bucket), from level ``top`` down, and the raw points no such block covers.
    Call inside one read transaction (the blocks and points of one snapshot)."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    intervals: list[tuple[Key, Key]] = [((lo, _MIN, _MIN), (hi, _MAX, _MAX))]
    used: list[np.ndarray] = []
    for level in range(top, 0, -1):
        later: list[tuple[Key, Key]] = []
        for start, end in intervals:
            rows = conn.execute(_BLOCKS_IN, (run_id, series_id, level, *start, *end)).fetchall()
            found = np.array(rows, dtype=_READ_FIELDS)
            if len(found) and _key(found[-1], "last") > end:
                found = found[:-1]  # ends past the interval: its points go further down
            if not len(found):
                later.append((start, end))
                continue
            # Between two blocks of a level there are no points: what goes further down is
            # the interval's head (before its first block), its runs of blocks too wide for
            # a bucket, and its tail (after its last block)
            fit = (found["last_step"] - found["first_step"]) < width
            used.append(found[fit])
            later.append((start, _before(_key(found[0], "first"))))
            wide = np.flatnonzero(~fit)
            if len(wide):
                breaks = np.flatnonzero(np.diff(wide) > 1)
                firsts = wide[np.r_[0, breaks + 1]]
                lasts = wide[np.r_[breaks, len(wide) - 1]]
                for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True):
                    later.append((_key(found[a], "first"), _key(found[b], "last")))
            later.append((_after(_key(found[-1], "last")), end))
        intervals = [(a, b) for a, b in later if a <= b]
    raw_parts = [
        np.array(
            conn.execute(_POINTS_IN, (run_id, series_id, *start, *end)).fetchall(),
            dtype=_RAW_FIELDS,
        )
        for start, end in intervals
    ]
    raw = np.concatenate(raw_parts) if raw_parts else np.zeros(0, dtype=_RAW_FIELDS)
    blocks = np.concatenate(used) if used else np.zeros(0, dtype=_READ_FIELDS)
    sizes = LEAF * FANOUT ** (blocks["level"] - 1)
    points = len(raw) + int(sizes.sum())
    not_finite = int((sizes - blocks["finite"]).sum()) + int((~np.isfinite(raw["value"])).sum())
    return Cover(blocks, raw, points, not_finite)


def _before(key: Key) -> Key:
    return (key[0], key[1], key[2] - 1)


def _after(key: Key) -> Key:
    return (key[0], key[1], key[2] + 1)


def extremes(part: Cover) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate points of a :class:`Cover` for a bucket's lowest and highest: each
    block's lowest and highest finite point, and the finite raw points, in key order
    (``steps``, ``values``, ``wall_ns``)."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    b, raw = part.blocks, part.raw
    has = b[np.isfinite(b["min_value"])]
    # a block whose one finite point is its lowest and highest gives it once
    other = has[
        (has["max_step"] != has["min_step"])
        | (has["max_wall"] != has["min_wall"])
        | (has["max_value"] != has["min_value"])
    ]
    finite = raw[np.isfinite(raw["value"])]
    steps = np.concatenate([finite["step"], has["min_step"], other["max_step"]])
    values = np.concatenate([finite["value"], has["min_value"], other["max_value"]])
    walls = np.concatenate([finite["wall"], has["min_wall"], other["max_wall"]])
    order = np.lexsort((walls, steps))
    return steps[order], values[order], walls[order]


def means(part: Cover, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bucket of ``edges`` (step ranges [edges[i], edges[i+1])) that holds a finite
    value: the mean step of its items (a block counts at its middle step, weighted by its
    finite values), the mean of its finite values, and how many there are."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    raw = part.raw[np.isfinite(part.raw["value"])]
    b = part.blocks[part.blocks["finite"] > 0]
    middle = (b["first_step"].astype(np.float64) + b["last_step"]) / 2
    at = np.concatenate([raw["step"].astype(np.float64), middle])
    sums = np.concatenate([raw["value"], b["total"]])
    counts = np.concatenate([np.ones(len(raw)), b["finite"].astype(np.float64)])
    bucket = np.clip(np.searchsorted(edges, at, side="right") - 1, 0, len(edges) - 2)
    n = len(edges) - 1
    count = np.bincount(bucket, counts, n)
    total = np.bincount(bucket, sums, n)
    where = np.bincount(bucket, at * counts, n)
    has = count > 0
    return where[has] / count[has], total[has] / count[has], count[has]


__all__ = [
    "BLOCKS_SCHEMA",
    "FANOUT",
    "LEAF",
    "LEVELS",
    "SERIES_COLUMNS",
    "Cover",
    "SeriesMeans",
    "add_points",
    "build_all",
    "cover",
    "extremes",
    "means",
    "points_per_block",
    "top_level",
]
