"""runs plot --metric of a long series (issue 32, read side): drawn as it is, it is read
downsampled (each step range's lowest and highest point: spikes stay, NaN counted); with
smoothing, every point is read; the export still has every point."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.plots.curves import Band, Curve
from mosaic_sdk.plots.metrics import PICTURE_BUCKETS, plot_metrics
from mosaic_sdk.runner.storage.export import export_run
from mosaic_sdk.runner.storage.rows import LineBatch, insert_series
from mosaic_sdk.runner.storage.schema import connect
from mosaic_sdk.runner.storage.store import RunStore

pytest.importorskip("matplotlib")
N = 40_000  # > 16 points a bucket: SQLite's downsampled read


def _long_runs(path: Path) -> list[float]:
    rng = np.random.default_rng(7)
    values = rng.normal(size=N)
    values[12_345] = 30.0
    values[100] = math.nan
    for i, run_id in enumerate(("L1", "L2")):
        with RunStore(path) as store:
            store.create_run(run_id, "w", config={"run_id": run_id, "seed": i})
        conn = connect(path)
        try:
            batch = LineBatch()
            batch.series.append((run_id, 1, "loss", None))
            batch.points.extend(
                (run_id, 1, k * 2, 10**18 + k, k + 1, float(v)) for k, v in enumerate(values)
            )
            conn.execute("BEGIN")
            insert_series(conn, run_id, batch)
            conn.execute("COMMIT")
        finally:
            conn.close()
    return values.tolist()


def test_a_long_series_is_drawn_from_its_downsampled_read(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    values = _long_runs(path)
    with RunStore(path, readonly=True) as store:
        drawn = plot_metrics(store, ["L1"], ["loss"], tmp_path / "long.png")
        [curve] = drawn.panels["loss"]
        assert isinstance(curve, Curve)
        assert PICTURE_BUCKETS < len(curve.x) <= 2 * PICTURE_BUCKETS
        assert curve.y.max() == 30.0 and curve.x[curve.y.argmax()] == 2 * 12_345
        finite = [v for v in values if math.isfinite(v)]
        assert curve.y.min() == min(finite)
        assert all(values[int(x) // 2] == y for x, y in zip(curve.x, curve.y, strict=True))
        assert drawn.not_finite == {"loss": 1}
        # smoothing needs every point
        smooth = plot_metrics(store, ["L1"], ["loss"], tmp_path / "smooth.png", window=5)
        [curve] = smooth.panels["loss"]
        assert isinstance(curve, Curve) and len(curve.x) == N - 1
        grouped = plot_metrics(store, ["L1", "L2"], ["loss"], tmp_path / "g.png", group_seeds=True)
        [band] = grouped.panels["loss"]
        assert isinstance(band, Band) and band.run_ids == ("L1", "L2")
        # the export is never downsampled
        out = tmp_path / "loss.jsonl"
        assert export_run(store, "L1", what="metrics", fmt="jsonl", output=out) == N


def test_seed_groups_are_drawn_from_each_runs_means_of_step_ranges(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    values = np.array(_long_runs(path))
    with RunStore(path, readonly=True) as store:
        grouped = plot_metrics(store, ["L1", "L2"], ["loss"], tmp_path / "g.png", group_seeds=True)
        means = store.series_means("L1", "loss", buckets=PICTURE_BUCKETS)
    [band] = grouped.panels["loss"]
    assert isinstance(band, Band)
    # both runs hold the same values: the band is the one run's means, no wider
    assert np.allclose(band.mean, np.interp(band.x, means.steps, means.values))
    assert np.allclose(band.low, band.high)
    # means of step ranges: every finite value in one of them, far smoother than the points
    finite = values[np.isfinite(values)]
    assert means.counts.sum() == finite.size and len(means) == PICTURE_BUCKETS
    assert np.abs(band.mean).max() < 1.5 < np.abs(finite).max()
    assert grouped.not_finite == {"loss": 2}
