"""``mosaic runs plot --metric`` (one panel per series, seeds grouped) and ``mosaic runs export
--what metrics`` (every point, NaN and infinities kept) over stored series."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.plots.curves import Band, Curve
from mosaic_sdk.plots.metrics import plot_metrics
from mosaic_sdk.runner.recording.ingest import LineIngest
from mosaic_sdk.runner.storage.export import export_run
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter

pytest.importorskip("matplotlib")


def add_series_run(
    path: Path,
    run_id: str,
    config: dict[str, object],
    points: dict[tuple[str, str | None], list[tuple[int, float]]],
) -> str:
    """A run whose worker reported ``points`` (by series name and agent) as metrics lines."""
    with RunStore(path) as store:
        store.create_run(run_id, "example", config={"run_id": run_id, **config})
    ingest = LineIngest(run_id)
    lines = []
    for (name, agent), values in points.items():
        for step, value in values:
            payload: dict[str, object] = {"step": step, "values": {name: value}}
            if agent is not None:
                payload["agent_id"] = agent
            lines.append(
                json.dumps(
                    {
                        "type": "lifecycle",
                        "event": "metrics",
                        "payload": payload,
                        "ts_unix_ns": 1_750_000_000_000_000_000 + step,
                    }
                )
            )
    batch = LineBatch(1)
    ingest.add(batch, [line.encode() for line in lines])
    writer = StoreWriter(path, run_id)
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    return run_id


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"
    for run_id, seed, lr, shift in (("s1", 1, 0.1, 0.0), ("s2", 2, 0.1, 1.0), ("o", 1, 0.3, 5.0)):
        add_series_run(
            path,
            run_id,
            {"seed": seed, "lr": lr},
            {
                ("losses/value", None): [(s, 1.0 / (s + 1) + shift) for s in range(0, 100, 10)],
                ("losses/policy", None): [(s, -shift) for s in range(0, 100, 10)],
                ("charts/sps", None): [(s, 100.0) for s in range(0, 100, 10)],
            },
        )
    add_series_run(
        path,
        "ma",
        {"seed": 1},
        {
            ("losses/value", "a"): [(1, 1.0), (2, math.nan), (3, math.inf)],
            ("losses/value", "b"): [(1, 2.0), (2, 3.0)],
        },
    )
    return path


def test_plot_metric_draws_one_panel_per_series_with_seeds_grouped(
    store: Path, tmp_path: Path
) -> None:
    with RunStore(store, readonly=True) as rs:
        result = plot_metrics(rs, ["s1", "s2", "o"], ["losses/*"], tmp_path / "m.png")
        assert sorted(result.panels) == ["losses/policy", "losses/value"]
        assert [type(x) for x in result.panels["losses/value"]] == [Curve] * 3
        value = result.panels["losses/value"][1]
        assert isinstance(value, Curve) and value.x.tolist() == list(range(0, 100, 10))
        assert value.y.tolist() == [1.0 / (s + 1) + 1.0 for s in range(0, 100, 10)]
        grouped = plot_metrics(
            rs, ["s1", "s2", "o"], ["losses/value"], tmp_path / "g.svg", group_seeds=True
        )
    lines = grouped.panels["losses/value"]
    assert [type(x) for x in lines] == [Band, Curve]  # seeds 1 and 2 of lr=0.1; lr=0.3 alone
    band = lines[0]
    assert isinstance(band, Band) and band.run_ids == ("s1", "s2")
    assert band.mean[0] == pytest.approx(1.0 + 0.5)  # (1 + 2) / 2 at step 0
    svg = (tmp_path / "g.svg").read_text()
    assert "losses/value" in svg and "charts/sps" not in svg
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_metric_per_agent_lines_and_non_finite_points(store: Path, tmp_path: Path) -> None:
    with RunStore(store, readonly=True) as rs:
        result = plot_metrics(rs, ["ma"], ["losses/value"], tmp_path / "a.png")
    a, b = result.panels["losses/value"]
    assert isinstance(a, Curve) and isinstance(b, Curve)
    assert (a.agent, a.y.tolist(), b.agent, b.y.tolist()) == (
        ("agent", "a"),
        [1.0],
        ("agent", "b"),
        [2.0, 3.0],
    )
    assert result.not_finite == {"losses/value": 2}


def test_runs_plot_metric_cli(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli.png"
    args = ["runs", "plot", "s1", "s2", "--metric", "losses/*", "--metric", "charts/sps"]
    assert main([*args, "-o", str(out), "--store", str(store), "--group-seeds"]) == 0
    assert "(3 panels, 3 lines, x = steps)" in capsys.readouterr().out
    assert out.exists()
    code = main(["runs", "plot", "s1", "--metric", "nope*", "-o", str(out), "--store", str(store)])
    assert code == 2
    err = capsys.readouterr().err
    assert "matches 'nope*'" in err and "charts/sps, losses/policy, losses/value" in err


def _expected(store: Path, run_id: str) -> list[tuple[object, ...]]:
    rows = []
    with RunStore(store, readonly=True) as rs:
        for info in rs.series(run_id):
            p = rs.series_points(run_id, info.name, info.agent_id)
            for step, value, wall in zip(p.steps, p.values, p.wall_ns, strict=True):
                rows.append((run_id, info.name, info.agent_id, step, value, wall / 1e9))
    return rows


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_export_metrics_has_every_point_in_each_format(store: Path, tmp_path: Path) -> None:
    expected = _expected(store, "ma") + _expected(store, "s1")
    assert len(expected) == 5 + 30
    got: dict[str, list[tuple[object, ...]]] = {}
    for fmt in ("csv", "jsonl", "parquet"):
        rows: list[tuple[object, ...]] = []
        for run_id in ("ma", "s1"):
            target = tmp_path / f"{run_id}.{fmt}"
            assert (
                main(
                    ["runs", "export", run_id, "--what", "metrics", "-o", str(target)]
                    + ["--store", str(store)]
                )
                == 0
            )
            if fmt == "csv":
                reader = csv.reader(io.StringIO(target.read_text()))
                header = next(reader)
                assert header == ["run_id", "name", "agent_id", "step", "value", "wall_time"]
                for r in reader:
                    agent = r[2] or None
                    rows.append((r[0], r[1], agent, int(r[3]), float(r[4]), float(r[5])))
            elif fmt == "jsonl":
                for line in target.read_text().splitlines():
                    d = json.loads(line)
                    rows.append(tuple(d.values()))
            else:
                import pyarrow.parquet as pq

                table = pq.read_table(target).to_pylist()
                rows.extend(tuple(d.values()) for d in table)
        got[fmt] = rows
    for fmt, rows in got.items():
        assert len(rows) == len(expected), fmt
        for row, want in zip(rows, expected, strict=True):
            assert all(_same(w, g) for w, g in zip(want, row, strict=True)), (fmt, row, want)


def test_export_metrics_filters_by_glob_and_agent(store: Path, tmp_path: Path) -> None:
    out = io.BytesIO()
    with RunStore(store, readonly=True) as rs:
        n = export_run(rs, "s1", what="metrics", fmt="jsonl", output=out, metrics=["charts/*"])
        assert n == 10
        assert {json.loads(x)["name"] for x in out.getvalue().splitlines()} == {"charts/sps"}
        out = io.BytesIO()
        assert export_run(rs, "ma", what="metrics", fmt="jsonl", output=out, agent="b") == 2
