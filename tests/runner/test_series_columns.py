"""RunStore.series_columns (issue 32, read side): numpy columns equal to series_points' lists
(NaN and infinities kept, order by step then wall time), ranges, and the downsampled read a
picture uses: real points, each pixel column's lowest and highest (from the series' blocks,
or by scanning), counts of the whole range."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.runner.storage import SeriesColumns
from mosaic_sdk.runner.storage import store as store_module
from mosaic_sdk.runner.storage.rows import LineBatch, insert_series
from mosaic_sdk.runner.storage.schema import connect
from mosaic_sdk.runner.storage.store import RunStore


def _fill(path: Path, values: list[float], steps: list[int] | None = None) -> None:
    with RunStore(path) as store:
        store.create_run("R", "w")
    conn = connect(path)
    try:
        batch = LineBatch()
        batch.series.append(("R", 1, "loss", None))
        batch.series.append(("R", 2, "loss", "player_1"))
        for i, v in enumerate(values):
            step = i * 4 if steps is None else steps[i]
            batch.points.append(("R", 1, step, 10**18 + 1000 * i, i + 1, v))
        batch.points.append(("R", 2, 0, 10**18, 10**6, 7.0))
        conn.execute("BEGIN")
        insert_series(conn, "R", batch)
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_columns_equal_the_points_lists_with_nan_and_infinities(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    values = [0.5, math.nan, math.inf, -math.inf, 2.0, 0.1 + 0.2, 5e-324]
    # two points at step 8: the later wall time comes second
    _fill(path, values, steps=[0, 8, 8, 12, 16, 20, 24])
    with RunStore(path, readonly=True) as store:
        cols = store.series_columns("R", "loss")
        lists = store.series_points("R", "loss")
        assert isinstance(cols, SeriesColumns)
        assert (cols.steps.dtype, cols.values.dtype, cols.wall_ns.dtype) == (
            np.int64,
            np.float64,
            np.int64,
        )
        assert cols.steps.tolist() == lists.steps == [0, 8, 8, 12, 16, 20, 24]
        assert cols.wall_ns.tolist() == lists.wall_ns
        assert np.array_equal(cols.values, np.array(lists.values), equal_nan=True)
        assert math.isnan(cols.values[1]) and cols.values[2] == math.inf
        assert cols.values[5] == 0.1 + 0.2 and cols.values[6] == 5e-324  # exact
        assert (cols.points, cols.not_finite, cols.downsampled, len(cols)) == (7, 3, False, 7)
        agent = store.series_columns("R", "loss", "player_1")
        assert agent.steps.tolist() == [0] and agent.values.tolist() == [7.0]
        assert len(store.series_columns("R", "nothing")) == 0


def test_ranges_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _fill(path, [float(i) for i in range(10)])  # steps 0, 4, ... 36
    with RunStore(path, readonly=True) as store:
        assert store.series_columns("R", "loss", after_step=20).steps.tolist() == [24, 28, 32, 36]
        got = store.series_columns("R", "loss", after_step=3, through_step=12)
        assert got.steps.tolist() == [4, 8, 12] and got.values.tolist() == [1.0, 2.0, 3.0]
        assert store.series_columns("R", "loss", limit=2).steps.tolist() == [0, 4]
        assert len(store.series_columns("R", "loss", after_step=36)) == 0
        with pytest.raises(ValueError, match="buckets"):
            store.series_columns("R", "loss", buckets=10, limit=5)
        # few points for the buckets: every point, not downsampled
        few = store.series_columns("R", "loss", buckets=5)
        assert few.steps.tolist() == list(range(0, 40, 4)) and not few.downsampled


def test_downsampled_read_keeps_each_buckets_lowest_and_highest_real_point(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    rng = np.random.default_rng(3)
    n = 5000
    values = rng.normal(size=n)
    values[1234] = 50.0  # a spike a picture must show
    values[4321] = -40.0
    values[77] = math.nan
    values[78] = math.inf
    _fill(path, values.tolist())
    with RunStore(path, readonly=True) as store:
        full = store.series_columns("R", "loss")
        thin = store.series_columns("R", "loss", buckets=100)
    assert thin.downsampled and len(thin) <= 200 and len(thin) > 100
    assert (thin.points, thin.not_finite) == (n, 2)
    # every point kept is a stored point, at its own step and wall time, in step order
    at = np.searchsorted(full.steps, thin.steps)
    assert np.array_equal(full.steps[at], thin.steps)
    assert np.array_equal(full.values[at], thin.values)
    assert np.array_equal(full.wall_ns[at], thin.wall_ns)
    assert np.all(np.diff(thin.steps) > 0)
    assert np.isfinite(thin.values).all()
    # read from the series' blocks (summary.py): at most two points per step range, and
    # every finite point has a kept point as low and one as high within two ranges' width
    # of its step (a block narrower than a range can lie across one range's edge)
    width = (full.steps[-1] + 1) / 100
    assert np.bincount((thin.steps / width).astype(np.int64)).max() <= 2
    finite = np.isfinite(full.values)
    for step, value in zip(full.steps[finite], full.values[finite], strict=True):
        near = np.abs(thin.steps - step) < 2 * width
        assert thin.values[near].min() <= value <= thin.values[near].max()
    assert 50.0 in thin.values and -40.0 in thin.values
    assert thin.values.min() == -40.0 and thin.values.max() == 50.0
    # a zoom: the range alone, downsampled or whole as its size asks
    with RunStore(path, readonly=True) as store:
        zoom = store.series_columns("R", "loss", after_step=399, through_step=800, buckets=100)
    assert not zoom.downsampled and zoom.steps.tolist() == list(range(400, 801, 4))


def test_downsampled_read_across_empty_ranges_and_all_nan_ranges(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    # 600 points at steps 0..599, then 600 at 100000.. (most buckets empty); the first 50 NaN
    steps = list(range(600)) + list(range(100_000, 100_600))
    values = [math.nan] * 50 + [float(i % 7) for i in range(1150)]
    _fill(path, values, steps=steps)
    with RunStore(path, readonly=True) as store:
        thin = store.series_columns("R", "loss", buckets=50)
    assert thin.downsampled and (thin.points, thin.not_finite) == (1200, 50)
    assert set(thin.values.tolist()) == {0.0, 6.0}
    assert thin.steps[0] >= 50 and thin.steps[-1] >= 100_000


def test_a_range_read_whole_is_downsampled_as_sqlite_downsamples_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite"
    rng = np.random.default_rng(5)
    values = rng.normal(size=3000)  # no ties: each bucket's lowest and highest are one point
    values[10] = math.nan
    values[2000] = -math.inf
    _fill(path, values.tolist(), steps=[i * 3 + (i % 5) for i in range(3000)])
    with RunStore(path) as store:  # a series read by scanning (not from its blocks)
        store.conn.execute("UPDATE series SET summarised = 0")
    with RunStore(path, readonly=True) as store:
        numpy_read = store.series_columns("R", "loss", buckets=400)  # 3000 <= 16 * 400
        zoom_numpy = store.series_columns("R", "loss", after_step=999, buckets=200)
        monkeypatch.setattr(store_module, "_READ_WHOLE", 0)
        sqlite_read = store.series_columns("R", "loss", buckets=400)
        zoom_sqlite = store.series_columns("R", "loss", after_step=999, buckets=200)
    for a, b in ((numpy_read, sqlite_read), (zoom_numpy, zoom_sqlite)):
        assert a.downsampled and b.downsampled
        assert np.array_equal(a.steps, b.steps) and np.array_equal(a.values, b.values)
        assert np.array_equal(a.wall_ns, b.wall_ns)
        assert (a.points, a.not_finite) == (b.points, b.not_finite)
    assert (numpy_read.points, numpy_read.not_finite) == (3000, 2)
    assert zoom_numpy.points == sum(1 for i in range(3000) if i * 3 + (i % 5) > 999)
