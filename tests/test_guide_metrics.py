"""docs/guides/metrics.md: its worker snippet runs under `mosaic run`, and `mosaic runs show`
prints what the guide says it prints (its series, text and --json), `runs plot --metric`,
`runs export --what metrics` and its SQL read what it says."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.cli import main

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "metrics.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", GUIDE.read_text(), flags=re.S | re.M)


@pytest.fixture
def metrics_worker(plugin_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    snippet = blocks("python")[0]  # the worker; the population example runs on its own
    (tmp_path / "metrics_snippet.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ["PYTHONPATH"])
    monkeypatch.setenv("MOSAIC_PLUGINS", "metrics_demo=metrics_doc_worker:MetricsDemo")
    return tmp_path / "runs.sqlite"


def test_the_guide_worker_reports_metrics_that_runs_show_prints(
    metrics_worker: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(metrics_worker)
    assert main(["run", "metrics_demo", "--store", store, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]

    assert main(["runs", "show", run_id, "--store", store]) == 0
    text = capsys.readouterr().out
    [shown_in_guide] = blocks("text")  # the guide's sample output
    assert shown_in_guide.strip() in text

    assert main(["runs", "show", run_id, "--store", store, "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    train = metrics["events"]["train_metrics"]
    assert train["count"] == 4
    assert train["latest"] == {
        "iteration": 3,
        "loss": 0.25,
    }  # "optimizer" is text: kept in the store, not a metric
    assert metrics["episode_metadata"] == {
        "episodes": 4,
        "latest": {"epsilon": 0.0498, "opponent": "random"},
    }
    assert set(metrics["events"]) == {"train_metrics"}  # standard and metrics events are not

    assert main(["runs", "show", run_id, "--store", store, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["points"], s["last_step"]) for s in shown["series"]] == [
        ("charts/learning_rate", 4, 80),
        ("losses/policy", 4, 80),
        ("losses/value", 4, 80),
        ("train_metrics/loss", 4, 3),
    ]
    assert shown["series_counts"] == {"points": 16, "refused": 0, "series": 4}

    picture = metrics_worker.parent / "losses.png"
    plot = ["runs", "plot", run_id, "--metric", "losses/*", "-o", str(picture)]
    assert main([*plot, "--store", store]) == 0
    assert "(2 panels, 2 lines" in capsys.readouterr().out and picture.exists()
    table = metrics_worker.parent / "losses.csv"
    assert (
        main(["runs", "export", run_id, "--what", "metrics", "-o", str(table), "--store", store])
        == 0
    )
    rows = table.read_text().splitlines()
    assert rows[0] == '"run_id","name","agent_id","step","value","wall_time"' and len(rows) == 17

    [sql_line] = [b for b in blocks("bash") if "json_extract" in b]
    sql = re.search(r'"(SELECT .*)"', sql_line).group(1).replace("01JD3...", run_id)
    with sqlite3.connect(store) as conn:
        losses = [row[0] for row in conn.execute(sql)]
    assert losses == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
