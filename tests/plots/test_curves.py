"""Learning curves read from the store: x axes, missing values, smoothing, mean and spread."""

from __future__ import annotations

import numpy as np
import pytest
from stored_runs import add_rows, add_run

from mosaic_sdk.plots.curves import (
    Curve,
    CurveError,
    RunningCurve,
    aggregate,
    downsample,
    envelope,
    learning_curve,
    read_episodes,
    skipped_text,
    smooth,
)
from mosaic_sdk.runner.storage.store import RunStore, UnknownRunError


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "runs.sqlite"


def test_the_three_x_axes_of_a_run(store_path):
    add_run(store_path, "r1", returns=[1.0, 2.5, -3.0], steps=[10, 20, 30], seconds=[0.5, 2, 4])
    with RunStore(store_path, readonly=True) as store:
        by_steps = learning_curve(store, "r1", "steps")
        by_episodes = learning_curve(store, "r1", "episodes")
        by_time = learning_curve(store, "r", "time")  # a unique prefix is enough
    np.testing.assert_array_equal(by_steps.x, [10, 30, 60])
    np.testing.assert_array_equal(by_steps.y, [1.0, 2.5, -3.0])
    np.testing.assert_array_equal(by_episodes.x, [1, 2, 3])
    np.testing.assert_allclose(by_time.x, [0.5, 2, 4], atol=1e-6)
    assert by_time.run_id == "r1" and by_time.x_axis == "time"


def test_episodes_without_a_return_are_skipped_but_their_steps_count(store_path):
    add_run(
        store_path,
        "r1",
        returns=[1.0, None, 3.0, float("inf"), 5.0],
        steps=[10, 10, None, 10, 10],
    )
    # a hand-edited store: text where numbers belong counts as missing, never as an error
    add_rows(store_path, "episodes", [("r1", 99, 99, 5, "oops", "x", 1, 0, b"\x01", "{}")])
    with RunStore(store_path, readonly=True) as store:
        episodes = read_episodes(store, "r1")
        curve = learning_curve(store, "r1", "steps")
        by_episodes = learning_curve(store, "r1", "episodes")
    assert len(episodes) == 6 and episodes.has_steps
    assert np.isnan(episodes.returns[-1]) and np.isnan(episodes.seconds[-1])
    np.testing.assert_array_equal(curve.x, [10, 20, 40])  # the None step count adds nothing
    np.testing.assert_array_equal(curve.y, [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(by_episodes.x, [1, 3, 5])  # episode numbers are kept
    skipped = {"no_return": 1, "not_finite": 1, "not_a_number": 1}
    assert episodes.skipped == curve.skipped == by_episodes.skipped == skipped
    assert skipped_text(curve.skipped) == (
        "3 episodes skipped: 1 with a return that is not a number, 1 with a return that is "
        "not finite, 1 with no return"
    )


def test_the_running_curve_of_watch_is_the_curve_of_runs_plot(store_path):
    returns = [1.0, None, 3.0, float("inf"), 5.0, -2.0]
    add_run(store_path, "r1", returns=returns, steps=[10, 10, None, 10, 10, 7])
    later = [
        ("r1", 50, 50, 6, "abc", 3, 1, 0, None, "{}"),
        ("r1", 51, 51, 7, 8.0, 4, 1, 0, None, "{}"),
    ]
    with RunStore(store_path, readonly=True) as store:
        running = RunningCurve("r1", store.get_run("r1")["started_at"])
        running.update(store)
    add_rows(store_path, "episodes", later)  # the run goes on: a second read gets the rest
    with RunStore(store_path, readonly=True) as store:
        running.update(store)
        whole = learning_curve(store, "r1", "steps")
    grown = running.curve()
    np.testing.assert_array_equal(grown.x, whole.x)
    np.testing.assert_array_equal(grown.y, whole.y)
    assert grown.skipped == whole.skipped == {"no_return": 1, "not_finite": 1, "not_a_number": 1}
    assert running.read == 8


def test_a_running_curve_reads_only_what_is_new(store_path):
    add_run(store_path, "r1", returns=[1.0, "abc"], steps=[10, 10])  # type: ignore[list-item]
    with RunStore(store_path, readonly=True) as store:
        running = RunningCurve("r1", store.get_run("r1")["started_at"])
        assert running.update(store) == 2 and running.update(store) == 0
    add_rows(store_path, "episodes", [("r1", 50, 50, 2, 4.0, 5, 1, 0, None, "{}")])
    with RunStore(store_path, readonly=True) as store:
        assert running.update(store) == 1
    curve = running.curve()
    assert curve.x.tolist() == [10.0, 25.0] and curve.y.tolist() == [1.0, 4.0]
    assert curve.skipped == {"not_a_number": 1} and running.read == 3


def test_episodes_without_a_timestamp_are_counted_on_the_time_axis(store_path):
    add_run(store_path, "r1", returns=[1.0, 2.0, 3.0], seconds=[1.0, None, 3.0])
    with RunStore(store_path, readonly=True) as store:
        assert learning_curve(store, "r1", "time").skipped == {"no_time": 1}
        assert learning_curve(store, "r1", "steps").skipped == {}


def test_time_never_goes_back_and_lines_without_a_timestamp_are_left_out(store_path):
    add_run(store_path, "r1", returns=[1, 2, 3, 4], seconds=[1.0, None, 5.0, 3.0])
    with RunStore(store_path, readonly=True) as store:
        curve = learning_curve(store, "r1", "time")
    np.testing.assert_allclose(curve.x, [1.0, 5.0, 5.0], atol=1e-6)
    np.testing.assert_array_equal(curve.y, [1, 3, 4])


def test_runs_with_nothing_to_draw_say_why(store_path):
    add_run(store_path, "empty", returns=[])
    add_run(store_path, "nulls", returns=[None, None])
    add_run(store_path, "nosteps", returns=[1.0, 2.0], steps=[None, None], seconds=[None, None])
    with RunStore(store_path, readonly=True) as store:
        with pytest.raises(CurveError, match="run empty has no stored episodes"):
            learning_curve(store, "empty")
        with pytest.raises(CurveError, match="none of run nulls's 2 episodes has a finite"):
            learning_curve(store, "nulls", "episodes")
        with pytest.raises(CurveError, match="carry no step counts; use --x episodes"):
            learning_curve(store, "nosteps", "steps")
        with pytest.raises(CurveError, match="a finite return and a timestamp"):
            learning_curve(store, "nosteps", "time")
        assert len(learning_curve(store, "nosteps", "episodes")) == 2
        with pytest.raises(UnknownRunError, match="no run 'ghost'"):
            learning_curve(store, "ghost")
        with pytest.raises(ValueError, match="x axis 'frames'"):
            learning_curve(store, "nosteps", "frames")


def test_smooth_is_the_trailing_mean_of_the_window():
    rng = np.random.default_rng(1)
    y = rng.normal(size=57)
    for window in (1, 2, 7, 57, 100):
        expected = [y[max(0, i - window + 1) : i + 1].mean() for i in range(len(y))]
        np.testing.assert_allclose(smooth(y, window), expected, rtol=1e-12, atol=1e-12)
    assert len(smooth(np.array([]), 5)) == 0


def curve(run_id, x, y, axis="episodes"):
    return Curve(run_id, axis, np.asarray(x, float), np.asarray(y, float))


def test_aggregate_mean_and_spread_over_the_common_range():
    a = curve("a", [1, 2, 3, 4], [0, 10, 20, 30])
    b = curve("b", [1, 2, 3, 4], [10, 10, 40, 30])
    c = curve("c", [1, 2, 3], [20, 40, 60])  # shorter: the band stops where it does
    band = aggregate([a, b, c], spread="minmax", label="g", points=3)
    np.testing.assert_array_equal(band.x, [1, 2, 3])
    np.testing.assert_allclose(band.mean, [10, 20, 40])
    np.testing.assert_allclose(band.low, [0, 10, 20])
    np.testing.assert_allclose(band.high, [20, 40, 60])
    assert band.run_ids == ("a", "b", "c") and band.label == "g"
    std = aggregate([a, b, c], spread="std", points=3)
    expected = np.std([[0, 10, 20], [10, 10, 40], [20, 40, 60]], axis=0)
    np.testing.assert_allclose(std.high - std.mean, expected)
    np.testing.assert_allclose(std.mean - std.low, expected)


def test_aggregate_interpolates_runs_sampled_at_different_steps_and_smooths_first():
    a = curve("a", [0, 100], [0, 100], axis="steps")
    b = curve("b", [0, 50, 100], [100, 50, 0], axis="steps")
    band = aggregate([a, b], points=5)  # no more points than the longest curve has
    np.testing.assert_array_equal(band.x, [0, 50, 100])
    np.testing.assert_allclose(band.mean, [50, 50, 50])
    np.testing.assert_allclose(band.low, [0, 50, 0])
    smoothed = aggregate([curve("s", [1, 2, 3], [0, 6, 0])], window=2, points=3)
    np.testing.assert_allclose(smoothed.mean, [0, 3, 3])


def test_aggregate_refuses_what_it_cannot_average():
    with pytest.raises(CurveError, match="share no range"):
        aggregate([curve("a", [1, 2], [0, 0]), curve("b", [5, 6], [0, 0])])
    with pytest.raises(ValueError, match="different x axes"):
        aggregate([curve("a", [1], [0]), curve("b", [1], [0], axis="steps")])
    with pytest.raises(ValueError, match="spread 'iqr'"):
        aggregate([curve("a", [1], [0])], spread="iqr")


def test_downsample_keeps_the_extremes_and_bounds_the_points():
    rng = np.random.default_rng(2)
    x = np.arange(100_000, dtype=float)
    y = rng.normal(size=x.size)
    y[12_345], y[77_777] = 50.0, -50.0
    dx, dy = downsample(x, y, 1000)
    assert len(dx) <= 1000 and np.all(np.diff(dx) > 0)
    assert 50.0 in dy and -50.0 in dy
    np.testing.assert_array_equal(dy, y[dx.astype(int)])  # real points, not averages
    short_x, short_y = downsample(x[:10], y[:10], 1000)
    np.testing.assert_array_equal(short_x, x[:10])
    np.testing.assert_array_equal(short_y, y[:10])


def test_envelope_is_the_min_and_max_of_consecutive_buckets():
    x = np.arange(10, dtype=float)
    y = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], dtype=float)
    bx, low, high = envelope(x, y, 4)  # buckets of 3: the last holds one point
    np.testing.assert_array_equal(bx, [1, 4, 7, 9])
    np.testing.assert_array_equal(low, [1, 1, 2, 3])
    np.testing.assert_array_equal(high, [4, 9, 6, 3])
    bx, low, high = envelope(x[:2], y[:2], 500)  # never more buckets than points
    np.testing.assert_array_equal(low, [3, 1])


def test_the_episodes_are_read_in_line_order_from_a_read_only_store(store_path):
    add_run(store_path, "r1", returns=[float(i) for i in range(1000)])
    before = store_path.read_bytes()
    with RunStore(store_path, readonly=True) as store:
        curve = learning_curve(store, "r1", "episodes")
    assert store_path.read_bytes() == before
    np.testing.assert_array_equal(curve.y, np.arange(1000))
