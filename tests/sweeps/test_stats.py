"""The statistics of a sweep's seeds (mosaic_sdk.sweeps.stats) on cases worked out by hand, where
the interquartile mean differs from the mean, the median and a lighter trim, and where a 90%
interval would differ from the 95% one; and the two commands that show them, ``sweeps show``
(seeds grouped by configuration, best IQM first) and ``runs compare``, on stores filled without
running a worker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.spec import Metric
from mosaic_sdk.sweeps.stats import Estimate, group_by_configuration, iqm, summarize
from mosaic_sdk.sweeps.store import SweepStore
from tests.watch.storefill import FilledRun

# Ten scores, skewed (one far above the rest), given out of order. Sorted: 0 1 2 3 5 8 13 21
# 34 100. Worked by hand:
# - IQM: 25% of 10 is 2.5, the whole scores cut at each end are 2 (scipy's trim_mean, which
#   rliable's IQM is, rounds down): the mean of 2 3 5 8 13 21 = 52 / 6 = 26 / 3 = 8.667
# - mean: 187 / 10 = 18.7
# - median: (5 + 8) / 2 = 6.5
# - a 10% trim cuts 1 at each end: the mean of 1 2 3 5 8 13 21 34 = 87 / 8 = 10.875
SKEWED = [13.0, 0.0, 100.0, 2.0, 21.0, 5.0, 1.0, 34.0, 3.0, 8.0]
SKEWED_IQM = 26 / 3
# Ten scores whose mean, median, IQM and any trim are all 10.
EVEN = [9.0, 10.0, 10.5, 10.0, 9.5, 10.0, 11.0, 10.0, 10.0, 10.0]


def test_the_iqm_is_the_mean_of_the_middle_half_not_the_mean_median_or_a_lighter_trim() -> None:
    s = summarize(SKEWED)
    assert s["iqm"].value == pytest.approx(SKEWED_IQM)
    assert s["mean"].value == pytest.approx(18.7)
    assert s["median"].value == pytest.approx(6.5)
    # the four figures differ: a statistic swapped for another cannot pass
    assert len({round(v, 6) for v in (SKEWED_IQM, 18.7, 6.5, 10.875)}) == 4
    for e in s.values():
        assert e.low <= e.value <= e.high
    # eight scores 1 2 4 8 16 32 64 128: two cut at each end, (4 + 8 + 16 + 32) / 4 = 15
    # (the mean is 255 / 8 = 31.875, the median 12, a 10% trim cuts none: 31.875)
    assert summarize([64, 1, 8, 128, 2, 32, 4, 16])["iqm"].value == pytest.approx(15.0)
    # the bootstrap calls it on a batch of resamples (one per row): each row on its own,
    # whatever its order
    rows = np.array([SKEWED, sorted(SKEWED), sorted(SKEWED, reverse=True), EVEN])
    assert iqm(rows, axis=-1) == pytest.approx([SKEWED_IQM] * 3 + [10.0])


def test_intervals_are_95_percent_percentile_intervals() -> None:
    # Three scores 0, 1, 2. A resample (three draws with replacement) has mean 0 only when all
    # three draws are 0: chance 1/27 = 3.7%; mean 2 likewise; the next means, 1/3 and 5/3, have
    # chance 3/27 each. The 95% interval's ends are the 2.5% and 97.5% percentiles: 3.7% of the
    # resamples lie at 0 (more than 2.5%) and at 2, so the interval is [0, 2]. A 90% interval
    # cuts 5% at each end, more than the 3.7% at 0 and 2: it would be [1/3, 5/3]. Of the 2000
    # resamples about 74 +- 8 are 0: the 2.5% point (the 50th) and the 5% point (the 100th)
    # are each 3 standard deviations away (and the generator is seeded).
    s = summarize([0.0, 2.0, 1.0])
    assert s["mean"] == Estimate(1.0, 0.0, 2.0)
    assert s["iqm"] == Estimate(1.0, 0.0, 2.0)  # a quarter of 3 scores rounds down to none cut


def _sweep_store(path: Path) -> str:
    """A sweep of two configurations, ten seeds each, as the local engine stores it (no run
    rows needed): lr 0.1 scored SKEWED, lr 0.2 scored EVEN; and attempts that must not count."""
    with RunStore(path) as runs:
        sweeps = SweepStore(runs)
        sweeps.create_sweep("S1", "bowl", "local", {"seeds": list(range(1, 11))}, Metric())
        n = 0
        for lr, scores in ((0.1, SKEWED), (0.2, EVEN)):
            for seed, score in enumerate(scores, start=1):
                key = f"t{n:04d}"
                if seed == 1:  # a first attempt cancelled at 500, run again: the last counts
                    sweeps.add_attempt("S1", key, f"R{n}a", {"lr": lr, "seed": seed})
                    sweeps.finish_attempt(f"R{n}a", "cancelled", 500.0)
                sweeps.add_attempt("S1", key, f"R{n}", {"lr": lr, "seed": seed})
                sweeps.finish_attempt(f"R{n}", "completed", score)
                n += 1
        # a failed trial with a metric: not a completed score
        sweeps.add_attempt("S1", f"t{n:04d}", "RF", {"lr": 0.1, "seed": 11})
        sweeps.finish_attempt("RF", "failed", 1000.0)
    return "S1"


def test_the_seeds_of_each_configuration_are_summarised_by_their_iqm(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    sweep_id = _sweep_store(store)
    with RunStore(store, readonly=True) as runs:
        groups = group_by_configuration(SweepStore(runs).trials(sweep_id))
    by_lr = {g["params"]["lr"]: g for g in groups}
    assert sorted(by_lr) == [0.1, 0.2] and all(set(g["params"]) == {"lr"} for g in groups)
    skewed = by_lr[0.1]
    assert sorted(skewed["seeds"]) == list(range(1, 11))
    assert sorted(skewed["scores"]) == sorted(SKEWED)
    assert skewed["stats"]["iqm"].value == pytest.approx(SKEWED_IQM)
    assert skewed["stats"]["mean"].value == pytest.approx(18.7)
    assert skewed["stats"]["median"].value == pytest.approx(6.5)
    assert by_lr[0.2]["stats"]["iqm"].value == pytest.approx(10.0)


def test_sweeps_show_puts_the_best_iqm_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # lr 0.2 (IQM 10) is best by IQM; lr 0.1 would be first by its mean (18.7) or by a 10%
    # trim (10.875): the order says which statistic ranked them
    store = tmp_path / "s.sqlite"
    sweep_id = _sweep_store(store)
    assert main(["sweeps", "show", sweep_id, "--store", str(store), "--json"]) == 0
    configs = json.loads(capsys.readouterr().out)["configurations"]
    assert [c["params"]["lr"] for c in configs] == [0.2, 0.1]
    assert configs[1]["iqm"]["value"] == pytest.approx(SKEWED_IQM)
    assert configs[1]["mean"]["value"] == pytest.approx(18.7)
    assert configs[1]["median"]["value"] == pytest.approx(6.5)
    assert main(["sweeps", "show", sweep_id, "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "95% percentile bootstrap intervals), best IQM first" in text
    table = text.split("best IQM first", 1)[1].splitlines()
    rows = [line.split("  ") for line in table if line.startswith('{"lr"')]
    assert [r[0] for r in rows] == ['{"lr": 0.2}', '{"lr": 0.1}']
    cells = [c.strip() for c in rows[1] if c.strip()]
    # params, seeds, mean, median, IQM with their intervals
    assert cells[1] == "10"
    assert cells[2].startswith("18.7 [") and cells[3].startswith("6.5 [")
    assert cells[4].startswith("8.667 [")


def test_runs_compare_gives_each_sides_iqm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.sqlite"
    for side, scores in (("A", SKEWED), ("B", EVEN)):
        for i, score in enumerate(scores):
            run = FilledRun(store, f"{side}{i:02d}")
            run.add_episode(score, 10)  # the metric: the return of its one episode
            run.finish()
    assert main(["runs", "compare", "A*", "B*", "--store", str(store), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["a"]["scores"]) == sorted(SKEWED)
    assert out["a"]["iqm"]["value"] == pytest.approx(SKEWED_IQM)
    assert out["b"]["iqm"]["value"] == pytest.approx(10.0)
    assert out["a"]["iqm"]["low"] <= SKEWED_IQM <= out["a"]["iqm"]["high"]
    assert main(["runs", "compare", "A*", "B*", "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "A: 10 runs matching A*: 10 scores, IQM 8.667 [" in text
    assert "mean 18.7 [" in text
