"""The series' block summaries (issue 32, summary.py): kept by the writer as points come, in any
batch sizes, equal to blocks built from scratch; turned off (and read by scanning) for a series
whose points come out of step order; built by the migration of a version-6 store; and what
the downsampled read and the means read from them."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.runner.storage import summary
from mosaic_sdk.runner.storage.rows import LineBatch, insert_series
from mosaic_sdk.runner.storage.schema import SCHEMA_VERSION, connect
from mosaic_sdk.runner.storage.store import RunStore

T0 = 10**18


def _add(path: Path, points: list[tuple[int, int, float]], *, new: bool, line: int = 0) -> None:
    """Store ``points`` ((series_id, step, value), in that order) as one batch (their line
    numbers: step + 1 + ``line``), through a RunStore's connection (it reads rows as dicts)."""
    store = RunStore(path)
    conn = store.conn
    try:
        batch = LineBatch()
        if new:
            batch.series += [("R", 1, "loss", None), ("R", 2, "lr", None)]
        for sid, step, value in points:
            batch.points.append(("R", sid, step, T0 + step * 1000 + sid, step + 1 + line, value))
        conn.execute("BEGIN")
        insert_series(conn, "R", batch)
        conn.execute("COMMIT")
    finally:
        store.close()


def _store(path: Path) -> None:
    with RunStore(path) as store:
        store.create_run("R", "w")


def _values(n: int, seed: int = 0) -> np.ndarray:
    values = np.random.default_rng(seed).normal(size=n)
    values[::37] = math.nan
    values[5::101] = math.inf
    values[7::211] = -math.inf
    return values


def _fill(path: Path, n: int, sizes: list[int]) -> np.ndarray:
    """``n`` points of series 1 (steps 0, 2, 4...) and of series 2, interleaved, stored in
    batches of the given sizes (cycled)."""
    _store(path)
    values = _values(n)
    start, k = 0, 0
    while start < n:
        size = sizes[k % len(sizes)]
        part = []
        for i in range(start, min(n, start + size)):
            part += [(1, 2 * i, float(values[i])), (2, 2 * i, float(-values[i]))]
        _add(path, part, new=start == 0)
        start, k = start + size, k + 1
    return values


def _blocks(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT * FROM series_blocks ORDER BY series_id, level, first_step"
        ).fetchall()
    finally:
        conn.close()


def test_blocks_kept_batch_by_batch_equal_blocks_built_from_scratch(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    n = 5000
    values = _fill(path, n, [1, 7, 16, 300, 3, 64, 1000, 15])
    kept = _blocks(path)
    conn = connect(path)
    conn.execute("DELETE FROM series_blocks")
    conn.execute("BEGIN")
    summary.build_all(conn)
    conn.execute("COMMIT")
    conn.close()
    assert kept == _blocks(path)
    # every level holds the complete blocks of its size, and no other
    for level in range(1, summary.LEVELS + 1):
        size = summary.points_per_block(level)
        assert sum(1 for b in kept if b[1] == 1 and b[2] == level) == n // size
    # level-1 block 10 of series 1: points 160..175
    block = next(b for b in kept if b[1:4] == (1, 1, 320))
    part = values[160:176]
    finite = part[np.isfinite(part)]
    assert block[3:9] == (320, T0 + 320_000 + 1, 321, 350, T0 + 350_000 + 1, 351)
    assert block[9] == len(finite) and block[10] == pytest.approx(finite.sum())
    low, high = (
        int(np.argmin(np.where(np.isfinite(part), part, np.inf))),
        int(np.argmax(np.where(np.isfinite(part), part, -np.inf))),
    )
    assert block[11:14] == (part[low], 320 + 2 * low, T0 + (320 + 2 * low) * 1000 + 1)
    assert block[14:17] == (part[high], 320 + 2 * high, T0 + (320 + 2 * high) * 1000 + 1)


def test_points_out_of_step_order_turn_the_summary_off_and_read_by_scanning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    _store(path)
    _add(path, [(1, i, float(i % 13)) for i in range(2000)], new=True)
    _add(path, [(2, i, 1.0) for i in range(100)], new=False)
    _add(path, [(1, 500, -99.0), (2, 100, 2.0)], new=False, line=5000)  # series 1 steps back
    _add(path, [(2, 102, 3.0), (2, 101, 4.0)], new=False)  # series 2, within a batch
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT series_id, summarised FROM series").fetchall() == [(1, 0), (2, 0)]
    assert conn.execute("SELECT count(*) FROM series_blocks").fetchone() == (0,)
    conn.close()
    _add(path, [(1, 3000 + i, 1.0) for i in range(100)], new=False)  # stays off
    with RunStore(path, readonly=True) as store:
        thin = store.series_columns("R", "loss", buckets=20)
        full = store.series_columns("R", "loss")
    assert thin.downsampled and thin.points == 2101 and -99.0 in thin.values
    edges = np.unique(np.linspace(0, 3100, 21).astype(np.int64))
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):  # read by scanning: exact
        inside = (full.steps >= lo) & (full.steps < hi)
        kept = (thin.steps >= lo) & (thin.steps < hi)
        assert kept.any() == inside.any()
        if inside.any():
            assert thin.values[kept].min() == full.values[inside].min()
            assert thin.values[kept].max() == full.values[inside].max()
    assert _blocks(path) == []


def _as_version_6(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE series_blocks")
    conn.execute("ALTER TABLE series DROP COLUMN summarised")
    conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_a_version_6_store_reads_as_before_and_gets_its_blocks_when_migrated(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    _fill(path, 3000, [3000])
    kept = _blocks(path)
    with RunStore(path, readonly=True) as store:
        with_blocks = store.series_columns("R", "loss", buckets=50)
        scanned_now = store.series_columns("R", "loss")
    _as_version_6(path)
    with RunStore(path, readonly=True) as store:  # read-only: nothing written, read by scanning
        thin = store.series_columns("R", "loss", buckets=50)
        means = store.series_means("R", "loss", buckets=50)
        assert np.array_equal(store.series_columns("R", "loss").values, scanned_now.values, True)
    assert (thin.points, thin.not_finite) == (with_blocks.points, with_blocks.not_finite)
    assert thin.downsampled and len(means) == 50 and means.points == 3000
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("6",)
    conn.close()
    with RunStore(path) as store:  # opening for writing migrates and builds the blocks
        pass
    assert _blocks(path) == kept
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    conn.close()
    with RunStore(path, readonly=True) as store:
        again = store.series_columns("R", "loss", buckets=50)
    assert np.array_equal(again.steps, with_blocks.steps)
    assert np.array_equal(again.values, with_blocks.values)


def test_downsampled_zoom_from_blocks_counts_its_range_and_keeps_real_points(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    values = _fill(path, 20_000, [4096])
    steps = np.arange(20_000) * 2
    with RunStore(path, readonly=True) as store:
        zoom = store.series_columns("R", "loss", after_step=5001, through_step=30_000, buckets=40)
    inside = (steps > 5001) & (steps <= 30_000)
    assert zoom.downsampled and zoom.points == int(inside.sum())
    assert zoom.not_finite == int((~np.isfinite(values[inside])).sum())
    assert zoom.steps.min() > 5001 and zoom.steps.max() <= 30_000
    assert np.array_equal(values[zoom.steps // 2], zoom.values)  # stored points, as stored
    finite = values[inside][np.isfinite(values[inside])]
    assert zoom.values.min() == finite.min() and zoom.values.max() == finite.max()


def test_means_of_step_ranges_from_blocks(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    values = _fill(path, 4096, [1000])
    finite = np.isfinite(values)
    with RunStore(path, readonly=True) as store:
        # 64 ranges of 64 points: ranges and blocks line up, so each mean is exact
        aligned = store.series_means("R", "loss", buckets=64)
        odd = store.series_means("R", "loss", buckets=37)
        assert len(store.series_means("R", "nothing", buckets=10)) == 0
        with pytest.raises(ValueError, match="buckets"):
            store.series_means("R", "loss", buckets=0)
    expected = [values[i : i + 64][finite[i : i + 64]].mean() for i in range(0, 4096, 64)]
    assert aligned.values == pytest.approx(expected)
    assert (aligned.points, aligned.not_finite) == (4096, int((~finite).sum()))
    # any ranges: every finite value is in exactly one mean
    assert odd.counts.sum() == finite.sum()
    assert (odd.values * odd.counts).sum() == pytest.approx(values[finite].sum())
    assert np.all(np.diff(odd.steps) > 0) and len(odd) == 37


def test_a_writers_connection_keeps_blocks_right_across_batches_and_a_rollback(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    _store(path)
    values = _values(3000, seed=4)
    conn = connect(path)  # one connection, as the store writer has: it keeps open blocks
    try:
        start = 0
        for k, size in enumerate([5, 40, 700, 1, 16, 1200, 3, 1035]):
            batch = LineBatch()
            if k == 0:
                batch.series += [("R", 1, "loss", None), ("R", 2, "lr", None)]
            for i in range(start, start + size):
                for sid in (1, 2):
                    batch.points.append(("R", sid, i, T0 + i, i + 1, float(values[i]) * sid))
            if k == 3:  # a transaction that fails after the hook ran: nothing of it is kept
                conn.execute("BEGIN")
                insert_series(conn, "R", batch)
                conn.execute("ROLLBACK")
            conn.execute("BEGIN")
            insert_series(conn, "R", batch)
            conn.execute("COMMIT")
            start += size
    finally:
        conn.close()
    kept = _blocks(path)
    conn = connect(path)
    conn.execute("DELETE FROM series_blocks")
    conn.execute("BEGIN")
    summary.build_all(conn)
    conn.execute("COMMIT")
    conn.close()
    assert kept == _blocks(path) and len(kept) == 2 * sum(
        3000 // summary.points_per_block(level) for level in range(1, summary.LEVELS + 1)
    )
