"""The sweep page in a real browser (Debian's Chromium, driven by Playwright), on a real sweep
of the example worker: the trials' rows, one parallel-coordinates line per trial, Optuna's
importance bars, the best-so-far curve, and a click on a trial reaching its curves; and the
Pareto front of a sweep with two objectives marked.

Skipped only when Chromium is not installed (``.ci/run`` installs it, so CI runs these).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.driver import run_sweep
from mosaic_sdk.sweeps.store import SweepStore
from mosaic_sdk.watch.browser import chromium_path, headless_chromium
from tests.watch.conftest import TOKEN
from tests.watch.processes import start_watch, stop
from tests.watch.sweepfill import make_sweep

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)",
)

#: The polylines of an ECharts parallel chart drawn as SVG: paths of one point per axis
#: (axis lines and ticks have two).
LINES = """(sel, axes) => Array.from(document.querySelectorAll(sel + ' svg path'))
  .filter(p => (p.getAttribute('d') || '').split(/[ML]/).filter(s => s.trim()).length === axes)"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    pytest.importorskip("playwright.sync_api", reason="playwright (the test extra)")
    pytest.importorskip("optuna", reason="the sweep's sampler and importance are Optuna's")
    with headless_chromium(CHROMIUM) as browser:
        yield browser


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1400})
    try:
        yield context.new_page()
    finally:
        context.close()


def wait_for(page: Any, script: str, timeout: float = 30_000) -> Any:
    return page.wait_for_function(f"() => {script}", timeout=timeout).json_value()


def lines(page: Any, chart: str, axes: int) -> int:
    return int(page.evaluate(f"() => ({LINES})({chart!r}, {axes}).length"))


def test_the_sweep_page_of_a_real_sweep(page: Any, tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    result = run_sweep(
        "example",
        {
            "base": {
                "policy": "reinforce",
                "episodes": 3,
                "max_steps_per_episode": 20,
                "include_observations": False,
            },
            "space": {
                "learning_rate": {"loguniform": [0.01, 1.0]},
                "gamma": {"uniform": [0.8, 0.99]},
            },
            "samples": 4,
            "sampler": "random",
            "metric": {"name": "return", "last": 2},
            "trials_at_once": 2,
        },
        store=store,
        report=lambda _m: None,
    )
    assert result.status == "completed"
    trials = sorted(result.trials, key=lambda t: t["trial_key"])
    assert [t["status"] for t in trials] == ["completed"] * 4
    watch, base = start_watch(store)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{base}/sweeps?token={TOKEN}")
        page.wait_for_selector(f"#sweeps tbody tr[data-sweep='{result.sweep_id}']")
        page.locator(f"#sweeps a:has-text('{result.sweep_id}')").click()
        page.wait_for_url(f"**/sweeps/{result.sweep_id}*")

        # the trials' rows: state, parameters, objective value and run
        wait_for(page, "document.querySelectorAll('#trials tbody tr').length === 4")
        rows = page.locator("#trials tbody tr")
        for i, t in enumerate(trials):
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells[0] == t["trial_key"] and cells[2] == "completed"
            assert float(cells[3]) == pytest.approx(t["params"]["gamma"], rel=1e-3)
            assert float(cells[4]) == pytest.approx(t["params"]["learning_rate"], rel=1e-3)
            assert float(cells[5]) == pytest.approx(t["metric"], rel=1e-3)
            assert cells[-1] == t["run_id"]

        # parallel coordinates: gamma, learning_rate and the objective, one line per trial
        wait_for(page, "window.__sweep.parallelKeys.length === 4")
        assert lines(page, "#parallel", 3) == 4

        # Optuna's importance: a bar per parameter
        wait_for(page, "window.__sweep.importanceData !== null")
        data = page.evaluate("() => window.__sweep.importanceData")
        assert data["params"] == ["gamma", "learning_rate"] and data["finished_sets"] == 4
        assert page.locator("#importance-note").is_hidden()
        assert sum(data["importances"][0].values()) == pytest.approx(1.0)
        bars = page.evaluate("() => window.__sweep.importance.getOption().series[0].data.length")
        assert bars == 2 and page.locator("#importance svg").count() == 1

        # the best-so-far curve: every trial's value, the running best by trial number
        drawn = page.evaluate("() => window.__sweep.best.data.map(c => Array.from(c))")
        values = [t["metric"] for t in trials]
        running = [max(values[: i + 1]) for i in range(4)]
        assert drawn == [[0, 1, 2, 3], values, running]
        assert page.locator("#best canvas").count() >= 1

        # a click on a line selects its trial; its link reaches the trial's curves
        point = page.evaluate(
            f"""() => {{
              const p = ({LINES})('#parallel', 3)[0];
              // halfway between the first two axes: away from the axes' brush areas
              const xy = p.getAttribute('d').split(/[ML]/).filter(s => s.trim())
                .map(s => s.trim().split(/[ ,]+/).map(Number));
              const x = (xy[0][0] + xy[1][0]) / 2, y = (xy[0][1] + xy[1][1]) / 2;
              const m = p.getScreenCTM();
              return [x * m.a + y * m.c + m.e, x * m.b + y * m.d + m.f];
            }}"""
        )
        page.mouse.click(point[0], point[1])
        key = wait_for(page, "window.__sweep.selected")
        assert key in {t["trial_key"] for t in trials}
        assert page.locator("#trials tr.chosen").get_attribute("data-trial") == key
        chosen = next(t for t in trials if t["trial_key"] == key)
        assert page.locator("#selected-key").inner_text() == key
        page.locator("#selected-curves").click()
        page.wait_for_url(f"**/runs/{chosen['run_id']}*")
        wait_for(page, f"document.getElementById('title').textContent === 'run {chosen['run_id']}'")
        wait_for(page, "document.querySelectorAll('.uplot').length >= 1")  # its curves
        assert errors == []
    finally:
        stop(watch)


def test_the_pareto_front_of_two_objectives_is_marked_and_the_page_follows_the_sweep(
    page: Any, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    # return (max) and steps (min): A (10, 5) and B (6, 2) on the front; C and D beaten;
    # E runs when the page opens, then ends at (12, 9): on the front too
    points = {"t0000": (10.0, 5), "t0001": (6.0, 2), "t0002": (6.0, 6), "t0003": (10.0, 8)}
    make_sweep(
        store,
        "SW-PARETO",
        {
            "space": {"lr": {"loguniform": [0.001, 1.0]}, "width": {"grid": [32, 64]}},
            "metric": [{"name": "return", "mode": "max"}, {"name": "steps", "mode": "min"}],
        },
        [
            (key, {"lr": 0.1 * (i + 1), "width": 32 if i % 2 else 64}, "completed", r, None)
            for i, (key, (r, _)) in enumerate(points.items())
        ]
        + [("t0004", {"lr": 0.7, "width": 64}, "running", None, None)],
        episodes={key: [p] for key, p in points.items()} | {"t0004": [(12.0, 9)]},
    )
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/sweeps/SW-PARETO?token={TOKEN}")
        wait_for(page, "document.querySelectorAll('#trials tbody tr').length === 5")
        state = "document.querySelector('#trials tr[data-trial=t0004] td.status').textContent"
        assert page.evaluate(f"() => {state}") == "running"
        marked = page.locator("#trials td.pareto").all_inner_texts()
        assert marked == ["\u2605 front", "\u2605 front"]
        front = page.evaluate(
            "() => Array.from(document.querySelectorAll('#trials td.pareto'))"
            ".map(td => td.parentElement.getAttribute('data-trial'))"
        )
        assert front == ["t0000", "t0001"]
        assert "Pareto front: 2 trial(s)" in page.locator("#summary").inner_text()
        # two params and two objectives: four axes, one line per trial with its values, the
        # front a series of its own
        wait_for(page, "window.__sweep.parallelKeys.length === 4")
        assert lines(page, "#parallel", 4) == 4
        names = page.evaluate(
            "() => window.__sweep.parallel.getOption().series.map(s => [s.name, s.data.length])"
        )
        assert names == [["trials", 2], ["Pareto front", 2]]

        # the running trial ends: the page shows it without a reload
        with RunStore(store) as runs:
            SweepStore(runs).finish_attempt("SW-PARETO-t0004-4", "completed", 12.0)
        wait_for(page, f"{state} === 'completed'")
        wait_for(page, "window.__sweep.parallelKeys.length === 5")
        assert lines(page, "#parallel", 4) == 5
        on_front = page.evaluate(
            "() => Array.from(document.querySelectorAll('#trials td.pareto'))"
            ".map(td => td.parentElement.getAttribute('data-trial'))"
        )
        assert on_front == ["t0000", "t0001", "t0004"]
    finally:
        stop(watch)
