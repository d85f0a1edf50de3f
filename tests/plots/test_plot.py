"""``mosaic runs plot`` and ``plot_runs``: the pictures, read back, and the errors."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image
from stored_runs import add_run

from mosaic_sdk.cli import main
from mosaic_sdk.extras import MissingExtraError
from mosaic_sdk.plots import Band, Curve, plot_runs
from mosaic_sdk.plots.curves import CurveError
from mosaic_sdk.runner.storage.store import RunStore, UnknownRunError

BLUE, ORANGE, GREEN = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E), (0x2C, 0xA0, 0x2C)  # tab10


def pixels_of(path):
    with Image.open(path) as image:
        assert image.format == "PNG"
        return np.asarray(image.convert("RGB"))


def count_color(pixels, rgb, tolerance=8):
    return int((np.abs(pixels.astype(int) - rgb).max(axis=-1) <= tolerance).sum())


def svg_texts(path):
    root = ET.parse(path).getroot()
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "runs.sqlite"
    rng = np.random.default_rng(0)
    for i, (lr, seed) in enumerate([(0.1, 1), (0.1, 2), (0.3, 1)]):
        returns = np.linspace(0, 100 * (i + 1), 300) + rng.normal(0, 5, 300)
        add_run(path, f"run-{i}", config={"lr": lr, "seed": seed}, returns=list(returns))
    add_run(path, "no-episodes", returns=[])
    return path


def test_a_png_of_two_runs_draws_each_in_its_own_color(store_path, tmp_path):
    out = tmp_path / "curves.png"
    with RunStore(store_path, readonly=True) as store:
        result = plot_runs(store, ["run-0", "run-2"], out, window=10)
    assert result.path == out and result.runs == 2
    assert [type(s) for s in result.series] == [Curve, Curve]
    assert result.labels == ("run-0 (example, seed 1)", "run-2 (example, seed 1)")
    pixels = pixels_of(out)
    assert pixels.shape == (550, 990, 3)
    assert count_color(pixels, BLUE) > 500 and count_color(pixels, ORANGE) > 500
    assert count_color(pixels, GREEN) == 0  # a third color only for a third curve
    assert not list(tmp_path.glob(".*.partial"))


def test_a_long_unsmoothed_run_is_drawn_as_its_envelope(tmp_path):
    path = tmp_path / "runs.sqlite"
    returns = np.where(np.arange(5000) % 2 == 0, 0.0, 100.0)  # a line would be a solid block
    add_run(path, "long", returns=returns.tolist())
    with RunStore(path, readonly=True) as store:
        result = plot_runs(store, ["long"], tmp_path / "long.png")
    assert len(result.series[0]) == 5000
    pixels = pixels_of(tmp_path / "long.png")
    # the band between 0 and 100, tab:blue at alpha 0.45 over white
    light = tuple(round(255 + 0.45 * (c - 255)) for c in BLUE)
    assert count_color(pixels, light, tolerance=6) > 50_000
    assert count_color(pixels, BLUE, tolerance=6) < 1000  # no full-strength line


def test_an_svg_keeps_its_text_as_text(store_path, tmp_path):
    out = tmp_path / "curves.SVG"
    with RunStore(store_path, readonly=True) as store:
        plot_runs(store, ["run-1"], out, x_axis="time", title="lr 0.1 <&> seeds")
    texts = svg_texts(out)
    assert "run-1 (example, seed 2)" in texts
    assert "wall time (s)" in texts and "episode return" in texts
    assert "lr 0.1 <&> seeds" in texts  # escaped in the file, the same text when parsed


def test_dollar_signs_in_labels_and_title_are_text_not_math(tmp_path):
    path = tmp_path / "runs.sqlite"
    add_run(path, "a", config={"note": "costs $5", "seed": 1}, returns=[1.0, 2.0])
    add_run(path, "b", config={"note": "$x^2$", "seed": 1}, returns=[1.0, 3.0])
    out = tmp_path / "dollars.svg"
    with RunStore(path, readonly=True) as store:
        plot_runs(store, ["a", "b"], out, group_seeds=True, title="from $5 to $7")
    texts = svg_texts(out)
    assert "from $5 to $7" in texts  # an even number of $ would be typeset as math
    assert "a (example note=costs $5)" in texts and "b (example note=$x^2$)" in texts


def test_group_seeds_draws_a_mean_and_band_per_config(store_path, tmp_path):
    out = tmp_path / "grouped.svg"
    with RunStore(store_path, readonly=True) as store:
        result = plot_runs(
            store,
            ["run-0", "run-1", "run-2"],
            out,
            x_axis="episodes",
            window=5,
            group_seeds=True,
            spread="std",
        )
    band, single = result.series
    assert isinstance(band, Band) and band.run_ids == ("run-0", "run-1")
    assert isinstance(single, Curve) and single.run_id == "run-2"
    assert result.labels == ("example lr=0.1", "run-2 (example lr=0.3)")
    assert result.runs == 3
    texts = svg_texts(out)
    assert "example lr=0.1 (mean of 2, ±1 std)" in texts
    assert "run-2 (example lr=0.3)" in texts
    assert "episode return (smoothed over 5)" in texts


def test_a_run_given_twice_or_by_prefix_is_drawn_once(store_path, tmp_path):
    with RunStore(store_path, readonly=True) as store:
        result = plot_runs(store, ["run-0", "run-0", "run-1"], tmp_path / "x.png")
        assert [s.run_id for s in result.series] == ["run-0", "run-1"]
        with pytest.raises(UnknownRunError, match="ambiguous"):
            plot_runs(store, ["run-"], tmp_path / "x.png")


def test_errors_come_before_anything_is_written(store_path, tmp_path):
    with RunStore(store_path, readonly=True) as store:
        with pytest.raises(ValueError, match=r"name it \.png or \.svg"):
            plot_runs(store, ["run-0"], tmp_path / "x.pdf")
        with pytest.raises(UnknownRunError, match="no run 'ghost'"):
            plot_runs(store, ["run-0", "ghost"], tmp_path / "x.png")
        with pytest.raises(CurveError, match="no-episodes has no stored episodes"):
            plot_runs(store, ["run-0", "no-episodes"], tmp_path / "x.png")
        with pytest.raises(ValueError, match="smoothing window 0"):
            plot_runs(store, ["run-0"], tmp_path / "x.png", window=0)
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith("runs.sqlite")]


def test_without_matplotlib_the_error_names_the_pip_command(store_path, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with RunStore(store_path, readonly=True) as store:
        with pytest.raises(MissingExtraError, match=r"pip install 'mosaic-worker-sdk\[plot\]'"):
            plot_runs(store, ["run-0"], tmp_path / "x.png")


# -- the command line -------------------------------------------------------------------------


def test_cli_plots_from_a_store_it_only_reads(store_path, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = store_path.read_bytes()
    argv = ["runs", "plot", "run-0", "run-1", "run-2", "--store", str(store_path)]
    assert main([*argv, "--smooth", "20", "--group-seeds", "--x", "episodes"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == "wrote learning-curves.png (3 runs, 2 curves, x = episodes)"
    assert pixels_of(tmp_path / "learning-curves.png").shape == (550, 990, 3)
    assert main(["runs", "plot", "run-0", "--store", str(store_path), "-o", "one.svg"]) == 0
    assert "one.svg (1 run, 1 curve, x = steps)" in capsys.readouterr().out
    assert store_path.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ghost"], "no run 'ghost' in the store"),
        (["no-episodes"], "run no-episodes has no stored episodes"),
        (["run-0", "-o", "x.gif"], r"name it .png or .svg"),
        (["run-0", "--smooth", "0"], "--smooth 0: use 1"),
    ],
)
def test_cli_errors_are_one_line_with_exit_2(store_path, tmp_path, capsys, args, message):
    out = tmp_path / "curves.png"
    argv = ["runs", "plot", *args, "--store", str(store_path)]
    if "-o" not in args:
        argv += ["-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mosaic: error: ") and err.count("\n") == 1
    assert message in err
    assert not out.exists()


def test_cli_without_matplotlib_exits_2_with_the_pip_command(
    store_path, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "x.png"
    assert main(["runs", "plot", "run-0", "--store", str(store_path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "pip install 'mosaic-worker-sdk[plot]'" in err
    assert not out.exists()


def test_cli_with_no_store_says_so(tmp_path, capsys):
    assert main(["runs", "plot", "r1", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_cli_and_the_package_import_no_heavy_library_until_used():
    import subprocess

    code = (
        "import sys, mosaic_sdk.plots, mosaic_sdk.cli; mosaic_sdk.cli.build_parser(); "
        "print(sorted(m for m in ('numpy', 'matplotlib', 'PIL', 'pyarrow') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
