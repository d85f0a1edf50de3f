"""Sweeps by the rules of unfinished runs and episodes: an objective leaves out the episode the
run's end cut off (unless the metric says include_unfinished), on the stored run and on its
lines alike; a sweep's best comes from a completed trial, never from a pruned, stopped,
cancelled or failed one's partial value, unless asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.objective import StreamObjective, metric_of_run
from mosaic_sdk.sweeps.spec import Metric, SpecError, parse_spec
from mosaic_sdk.sweeps.store import SweepStore
from tests.unfinished_runs import (
    FINISHED_RETURNS,
    FINISHED_STEPS,
    PARTIAL_RETURN,
    PARTIAL_STEPS,
    cut_run_lines,
    store_cut_run,
)

CASES = [
    (Metric(reduce="mean"), sum(FINISHED_RETURNS) / 2),
    (Metric(reduce="best"), max(FINISHED_RETURNS)),
    (Metric(reduce="last_mean", last=1), FINISHED_RETURNS[-1]),
    (Metric("steps", reduce="mean"), sum(FINISHED_STEPS) / 2),
    (
        Metric(reduce="mean", include_unfinished=True),
        (sum(FINISHED_RETURNS) + PARTIAL_RETURN) / 3,
    ),
    (
        Metric("steps", reduce="mean", include_unfinished=True),
        (sum(FINISHED_STEPS) + PARTIAL_STEPS) / 3,
    ),
]


@pytest.mark.parametrize(("metric", "expected"), CASES)
def test_an_objective_leaves_the_cut_episode_out_stored_or_streamed(
    tmp_path: Path, metric: Metric, expected: float
) -> None:
    path = tmp_path / "runs.sqlite"
    store_cut_run(path)
    with RunStore(path, readonly=True) as runs:
        assert metric_of_run(runs, "CUT", metric) == pytest.approx(expected)
    stream = StreamObjective([metric])
    stream.add([line.encode() for line in cut_run_lines()])
    got = stream.value(metric)
    assert got is not None and got[0] == pytest.approx(expected)
    assert stream.episodes == 2  # finished episodes (ASHA's time attribute)


def test_the_spec_takes_include_unfinished() -> None:
    spec = parse_spec({"metric": {"name": "return", "include_unfinished": True}})
    assert spec.metric.include_unfinished is True
    assert spec.metric.to_dict()["include_unfinished"] is True
    assert "include_unfinished" not in parse_spec({}).metric.to_dict()
    with pytest.raises(SpecError, match="metric.include_unfinished: give true or false"):
        parse_spec({"metric": {"include_unfinished": "yes"}})


def _sweep(path: Path, trials: list[tuple[str, str, float | None]]) -> SweepStore:
    runs = RunStore(path)
    sweeps = SweepStore(runs)
    sweeps.create_sweep("SW", "fixture", "local", {}, Metric())
    for key, status, value in trials:
        run_id = f"R-{key}"
        runs.create_run(run_id, "fixture")
        sweeps.add_attempt("SW", key, run_id, {"k": key})
        sweeps.finish_attempt(run_id, status, value)
    return sweeps


def test_a_sweeps_best_comes_from_a_completed_trial_unless_asked(tmp_path: Path) -> None:
    sweeps = _sweep(
        tmp_path / "runs.sqlite",
        [
            ("t0", "completed", 5.0),
            ("t1", "pruned", 50.0),  # stopped early: its value is of a run cut short
            ("t2", "cancelled", 70.0),
            ("t3", "stopped", 60.0),
            ("t4", "completed", 7.0),
            ("t5", "failed", None),
        ],
    )
    try:
        [row] = sweeps.list_sweeps()
        assert row["best"] == 7.0
        assert sweeps.list_sweeps(include_unfinished=True)[0]["best"] == 70.0
        order = [t["trial_key"] for t in sweeps.trials("SW")]
        assert order == ["t4", "t0", "t2", "t3", "t1", "t5"]  # completed first, best first
        asked = [t["trial_key"] for t in sweeps.trials("SW", include_unfinished=True)]
        assert asked == ["t2", "t3", "t1", "t4", "t0", "t5"]
    finally:
        sweeps.runs.close()


def test_sweeps_list_and_show_rank_completed_trials_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main

    path = tmp_path / "runs.sqlite"
    _sweep(path, [("t0", "completed", 5.0), ("t1", "pruned", 50.0)]).runs.close()
    assert main(["sweeps", "list", "--store", str(path)]) == 0
    assert "return 5 (max)" in capsys.readouterr().out
    assert main(["sweeps", "list", "--store", str(path), "--include-unfinished"]) == 0
    assert "return 50 (max)" in capsys.readouterr().out
    assert main(["sweeps", "show", "SW", "--store", str(path)]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if "R-t" in line]
    assert rows == ["t0", "t1"]
    assert main(["sweeps", "show", "SW", "--store", str(path), "--include-unfinished"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if "R-t" in line]
    assert rows == ["t1", "t0"]
