"""``mosaic runs plot --metric`` over series it cannot draw as they are (issue 45): a series
without a finite value is left out and named, the others drawn; values near the float limit
(+-1e308, where matplotlib's axis arithmetic overflows) are drawn in units of a power of ten."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.plots.curves import Curve, CurveError
from mosaic_sdk.plots.metrics import plot_metrics
from mosaic_sdk.runner.storage.store import RunStore
from tests.plots.test_series_plot_export import add_series_run

pytest.importorskip("matplotlib")

STEPS = range(0, 100, 10)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"
    for run_id, seed in (("r1", 1), ("r2", 2)):
        add_series_run(
            path,
            run_id,
            {"seed": seed},
            {
                ("good", None): [(s, float(s)) for s in STEPS],
                ("nans", None): [(s, math.nan) for s in STEPS],
                ("infs", None): [(s, math.inf if s % 20 else -math.inf) for s in STEPS],
                ("huge", None): [(s, 1e308 if s % 20 else -1e308) for s in STEPS],
            },
        )
    return path


def test_a_glob_draws_every_series_it_can_and_names_those_it_cannot(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "all.png"
    code = main(["runs", "plot", "r1", "--metric", "*", "-o", str(out), "--store", str(store)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out.exists() and "(2 panels, 2 lines, x = steps)" in captured.out
    said = captured.err.splitlines()
    for name in ("infs", "nans"):
        line = f"mosaic: warning: series {name!r} has no finite value to draw in these runs"
        assert f"{line}: not drawn (the other series are)" in said
    assert "mosaic: note: series huge reaches 1e+308: drawn in units of 1e+308" in said


@pytest.mark.parametrize(("window", "group_seeds"), [(1, False), (5, False), (1, True), (3, True)])
def test_values_near_the_float_limit_are_drawn_in_units_of_a_power_of_ten(
    store: Path, tmp_path: Path, window: int, group_seeds: bool
) -> None:
    with RunStore(store, readonly=True) as runs:
        result = plot_metrics(
            runs,
            ["r1", "r2"],
            ["huge", "good"],
            tmp_path / "huge.svg",
            window=window,
            group_seeds=group_seeds,
        )
    assert result.units == {"huge": 1e308} and set(result.panels) == {"good", "huge"}
    text = (tmp_path / "huge.svg").read_text(encoding="utf-8")
    assert "value (x 1e+308)" in text
    [line] = result.panels["huge"] if group_seeds else result.panels["huge"][:1]
    y = line.y if isinstance(line, Curve) else line.mean
    assert 0 < float(max(abs(y))) < 10 and all(math.isfinite(v) for v in y)
    good = result.panels["good"][0]  # the other panel keeps its values
    assert float(max(good.y if isinstance(good, Curve) else good.mean)) >= 80.0


def test_nothing_to_draw_is_one_line_and_exit_2(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "none.png"
    args = ["runs", "plot", "r1", "--metric", "nans", "--metric", "infs", "-o", str(out)]
    assert main([*args, "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nothing to draw" in err
    assert "'infs'" in err and "'nans'" in err and not out.exists()
    with RunStore(store, readonly=True) as runs, pytest.raises(CurveError, match="'nans'"):
        plot_metrics(runs, ["r1"], ["nans"], tmp_path / "x.png")
