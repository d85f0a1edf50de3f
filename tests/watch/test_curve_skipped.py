"""An episode whose return is not a number ("abc") or not finite (1e400) is skipped the same
way by both views of a learning curve (one curve module, mosaic_sdk.plots.curves), and both
say so: ``mosaic runs plot`` in the legend and a warning, ``mosaic watch`` in its curve
answer (and the page shows it: test_browser.py, in Chromium). The store is written by a real
``mosaic run``, which keeps "abc" as text and 1e400 as an infinite REAL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "runner" / "fixtures"
RUN_ID = "curve-skip-1"

BAD = {  # the return as the worker's JSON line has it -> why it is skipped
    '"abc"': ("not_a_number", "1 episode skipped: 1 with a return that is not a number"),
    "1e400": ("not_finite", "1 episode skipped: 1 with a return that is not finite"),
}


def episode(index: int, total_reward: str) -> str:
    return (
        f'{{"type": "episode", "run_id": "{RUN_ID}", "episode_index": {index}, '
        f'"total_reward": {total_reward}, "steps": 10, "ts": {1750000001.0 + index}}}'
    )


def record(store: Path, tmp_path: Path, bad: str) -> None:
    """``mosaic run`` of a worker that writes episodes of return 1, ``bad`` and 2."""
    started = {"type": "lifecycle", "event": "run_started", "run_id": RUN_ID, "payload": {}}
    done = {**started, "event": "run_completed"}
    lines = [json.dumps(started), episode(0, "1.0"), episode(1, bad), episode(2, "2.0")]
    script = tmp_path / "lines.jsonl"
    script.write_text("\n".join([*lines, json.dumps(done)]) + "\n")
    (tmp_path / "err.txt").write_text("")
    old = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": str(FIXTURES) + (os.pathsep + old if old else ""),
        "MOSAIC_PLUGINS": "iofixture=io_workers:IoFixture",
        "MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", "iofixture", "--store", str(store)]
    argv += ["--run-id", RUN_ID, "--no-preflight", "--json", "--set", "mode=replay"]
    argv += ["--set", f"path={script}", "--set", f"stderr_file={tmp_path / 'err.txt'}"]
    done_run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done_run.returncode == 0, done_run.stderr
    assert json.loads(done_run.stdout)["counts"]["episodes"] == 3


@pytest.mark.parametrize("bad", sorted(BAD))
def test_watch_answers_and_says_what_it_skipped(
    client: TestClient, store: Path, tmp_path: Path, bad: str
) -> None:
    record(store, tmp_path, bad)
    got = client.get(f"/api/runs/{RUN_ID}/curve?smooth=1")
    assert got.status_code == 200, got.text
    curve = got.json()
    reason, text = BAD[bad]
    assert curve["raw"] == [[10.0, 1.0], [30.0, 2.0]]  # the skipped episode's steps count
    assert curve["episodes"] == 2 and curve["read"] == 3
    assert curve["skipped"] == {reason: 1} and curve["skipped_text"] == text
    again = client.get(f"/api/runs/{RUN_ID}/curve?known=3").json()
    assert again["unchanged"] is True


@pytest.mark.parametrize("bad", sorted(BAD))
def test_runs_plot_skips_the_same_and_says_so(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    record(store, tmp_path, bad)
    svg = tmp_path / "curve.svg"
    assert main(["runs", "plot", RUN_ID, "--store", str(store), "-o", str(svg)]) == 0
    _, err = capsys.readouterr()
    _, text = BAD[bad]
    assert f"mosaic: warning: run {RUN_ID}: {text}; not on its curve" in err
    assert f"[{text}]" in svg.read_text()  # in the curve's legend entry


def test_a_run_of_only_skipped_episodes_says_why_in_both(
    client: TestClient, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.watch.storefill import FilledRun

    run = FilledRun(store, "all-bad")
    run.add_episode("abc", 5)  # type: ignore[arg-type]  # what a broken worker stores
    run.add_episode(float("inf"), 5)
    curve = client.get("/api/runs/all-bad/curve").json()
    assert curve["episodes"] == 0 and curve["raw"] == [] and curve["read"] == 2
    both = "2 episodes skipped: 1 with a return that is not a number, 1 with a return that is "
    assert curve["skipped_text"] == both + "not finite"
    code = main(["runs", "plot", "all-bad", "--store", str(store), "-o", str(tmp_path / "x.png")])
    assert code == 2
    assert both + "not finite" in capsys.readouterr().err


def test_the_run_page_has_a_place_for_the_sentence(client: TestClient) -> None:
    """The place for the sentence is in the page and run.js fills it; that the page shows it
    is checked in a browser by
    ``tests/watch/test_browser.py::test_the_run_page_says_which_episodes_its_curve_skipped``."""
    assert 'id="curve-skipped"' in client.get("/static/run.html").text
    script = client.get("/static/run.js").text
    assert 'getElementById("curve-skipped")' in script and "data.skipped_text" in script
    assert '"?known=" + state.read' in script  # the page's cursor counts skipped episodes too
