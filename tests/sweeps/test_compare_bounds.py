"""``mosaic runs compare`` on the sizes it is given (issue 45): thousands of runs a side are
resampled in batches of bounded size (2.7 GB for 10k runs a side before), and one run a side
says that there is no interval instead of printing one of width 0."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.cli import main
from tests.plots.stored_runs import add_run

pytest.importorskip("scipy", reason="runs compare's statistics need the search extra")

from mosaic_sdk.sweeps import stats  # noqa: E402


def test_the_bootstrap_holds_a_bounded_number_of_resampled_values() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=1500).tolist(), rng.normal(0.2, size=1500).tolist()
    tracemalloc.start()
    try:
        p = stats.prob_improvement(a, b)
        _, peak_p = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        side = stats.summarize(a)
        _, peak_s = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 2000 resamples of 3000 scores, scored at once, held ~480 MB; in batches of at most
    # RESAMPLED_VALUES values, a bounded multiple of that
    assert max(peak_p, peak_s) < 120 * stats.RESAMPLED_VALUES, (peak_p, peak_s)
    assert p.low < p.value < p.high and side["iqm"].low < side["iqm"].value < side["iqm"].high


def test_small_samples_resample_as_one_batch_as_before() -> None:
    # worked by hand in tests/sweeps/test_search.py; batching leaves them as they were
    assert stats.prob_improvement([3, 4], [1, 3]) == stats.Estimate(0.875, 0.5, 1.0)
    s = stats.summarize([0.0, 1.0])
    assert (s["mean"].value, s["mean"].low, s["mean"].high) == (0.5, 0.0, 1.0)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"
    add_run(path, "A-1", returns=[5.0])
    add_run(path, "B-1", returns=[3.0])
    for i in range(3):
        add_run(path, f"C-{i}", returns=[1.0 + i])
    return path


def test_one_run_a_side_says_there_is_no_interval(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "compare", "A-1", "B-1", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "A: run A-1: 1 score, IQM 5, mean 5 (one score: no interval)" in out
    assert (
        "P(A beats B) = 1 (no interval: one run a side, nothing to resample; compare several "
        "runs a side (seeds) for one; a higher score beats)" in out
    )
    assert "[" not in out  # no interval of width 0 shown as if it were one
    assert main(["runs", "compare", "A-1", "B-1", "--store", str(store), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["a"]["n"] == got["b"]["n"] == 1
    assert got["interval"].startswith("no interval: one run a side")
    assert got["a"]["interval"] == "one score: no interval"


def test_one_run_on_one_side_says_whose_runs_the_interval_resamples(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "compare", "C-*", "A-1", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "A: 3 runs matching C-*: 3 scores, IQM" in out
    assert "B: run A-1: 1 score" in out
    assert "(95% bootstrap interval of A's runs only: B has one run; a higher" in out
    assert main(["runs", "compare", "C-*", "C-*", "--store", str(store), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["interval"] == "95% bootstrap interval" and got["a"]["n"] == 3
