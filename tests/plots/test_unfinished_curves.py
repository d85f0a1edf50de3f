"""Learning curves by the rule of unfinished episodes (docs/reference/telemetry.md): the
episode the run's end cut off has no point (it is skipped, saying why) unless asked; its steps
still count on the x axis of a later point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.plots.curves import RunningCurve, learning_curve, skipped_text
from mosaic_sdk.runner.storage.store import RunStore
from tests.unfinished_runs import FINISHED_RETURNS, PARTIAL_RETURN, store_cut_run


def test_the_curve_leaves_the_cut_episode_out_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store_cut_run(path)
    with RunStore(path, readonly=True) as store:
        curve = learning_curve(store, "CUT")
        assert curve.y.tolist() == FINISHED_RETURNS
        assert curve.x.tolist() == [3.0, 5.0]
        assert curve.skipped == {"unfinished": 1}
        assert "1 with no end of its own (the run's end cut it off: unfinished)" in skipped_text(
            curve.skipped
        )
        assert learning_curve(store, "CUT", "episodes").x.tolist() == [1.0, 2.0]
        every = learning_curve(store, "CUT", include_unfinished=True)
        assert every.y.tolist() == [*FINISHED_RETURNS, PARTIAL_RETURN]
        assert every.x.tolist() == [3.0, 5.0, 9.0] and every.skipped == {}
        # the smoothed curve of the last 10 is that of the finished episodes
        assert curve.smoothed(10)[-1] == pytest.approx(np.mean(FINISHED_RETURNS))
        started = store.get_run("CUT")["started_at"]
        running = RunningCurve("CUT", started)
        running.update(store)
        assert running.curve().y.tolist() == FINISHED_RETURNS
        assert running.read == 3 and running.skipped == {"unfinished": 1}
        asked = RunningCurve("CUT", started, include_unfinished=True)
        asked.update(store)
        assert asked.curve().y.tolist()[-1] == PARTIAL_RETURN


def test_runs_plot_draws_the_cut_episode_only_when_asked(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from mosaic_sdk.plots.figure import plot_runs

    path = tmp_path / "runs.sqlite"
    store_cut_run(path)
    with RunStore(path, readonly=True) as store:
        plain = plot_runs(store, ["CUT"], tmp_path / "a.png")
        asked = plot_runs(store, ["CUT"], tmp_path / "b.png", include_unfinished=True)
    assert plain.series[0].y.tolist() == FINISHED_RETURNS
    assert plain.skipped == {"CUT": {"unfinished": 1}}
    assert asked.series[0].y.tolist()[-1] == PARTIAL_RETURN and asked.skipped == {}
