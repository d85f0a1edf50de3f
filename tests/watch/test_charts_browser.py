"""The charts of mosaic watch in a real browser (Debian's Chromium, driven by Playwright):
series listed and filtered by glob, TensorBoard's smoothing moving the drawn line, the x axis,
agents split, live points, two runs overlaid on the compare page, zoom, and the download.

Skipped only when Chromium is not installed (``.ci/run`` installs it, so CI runs these).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.watch.browser import chromium_path, headless_chromium
from tests.watch.conftest import TOKEN
from tests.watch.processes import start_watch, stop
from tests.watch.storefill import FilledRun, metrics_line

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)",
)
T0 = 1_800_000_000_000_000_000  # ns: the wall time of step 0


def noisy(seed: int, n: int) -> list[float]:
    rnd = random.Random(seed)
    return [1.0 / (1 + i / 10) + rnd.uniform(-0.2, 0.2) for i in range(n)]


def fill(run: FilledRun, seed: int, n: int = 120, first: int = 0) -> list[float]:
    """``losses/value`` (noisy), ``losses/policy`` and ``charts/sps`` at steps 10*i, one line
    a second of wall time, and ``reward`` of two agents; the values of ``losses/value``."""
    values = noisy(seed, first + n)[first:]
    run.add_lines(
        [
            metrics_line(
                {"losses/value": v, "losses/policy": -v, "charts/sps": 500.0 + i},
                step=10 * i,
                ts_ns=T0 + i * 1_000_000_000,
            )
            for i, v in zip(range(first, first + n), values, strict=True)
        ]
    )
    run.add_lines(
        [
            metrics_line({"reward": float(i % 7)}, step=i, agent_id=agent)
            for i in range(first, first + n, 10)
            for agent in ("red", "blue")
        ]
    )
    return values


def tensorboard_smoothing(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing, written from its description: an exponential moving average
    started at 0 and divided by 1 - weight**n after n values."""
    out, last = [], 0.0
    for n, v in enumerate(values, 1):
        last = last * weight + (1 - weight) * v
        out.append(last / (1 - weight**n))
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    pytest.importorskip("playwright.sync_api", reason="playwright (the test extra)")
    with headless_chromium(CHROMIUM) as browser:
        yield browser


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1400}, accept_downloads=True)
    try:
        yield context.new_page()
    finally:
        context.close()


def wait_for(page: Any, script: str, timeout: float = 30_000) -> Any:
    return page.wait_for_function(f"() => {script}", timeout=timeout).json_value()


def drawn(page: Any, chart: str) -> list[list[float | None]]:
    """The columns the chart's uPlot draws now: x, then each line (raw, smoothed...)."""
    return page.evaluate(
        f"() => window.__watch.chart({json.dumps(chart)}).drawn.map(c => Array.from(c))"
    )


def test_series_charts_filter_smooth_split_follow_and_download(page: Any, tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    run = FilledRun(store, "CHARTS-A")
    run.add_episode(10.0, 50)
    values = fill(run, seed=1)
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/runs/CHARTS-A?token={TOKEN}")
        names = "window.__watch.seriesCharts.join()"
        wait_for(page, f"{names} === 'charts/sps,losses/policy,losses/value,reward'")
        listed = page.locator("#series-list li").all_inner_texts()
        assert len(listed) == 5 and listed[0].startswith("charts/sps")  # reward: 2 agents
        assert "120 points" in listed[2]

        # the glob filter
        page.locator("#series-glob").fill("losses/*")
        wait_for(page, f"{names} === 'losses/policy,losses/value'")
        assert page.locator("#series-list li").count() == 2
        page.locator("#series-glob").fill("")
        wait_for(page, "window.__watch.seriesCharts.length === 4")

        # smoothing: at 0 the line is the values; at 0.9 it is TensorBoard's average
        page.locator("#smoothing").fill("0")
        wait_for(page, "window.__watch.chart('losses/value').drawn.length === 2")
        x, raw = drawn(page, "losses/value")
        assert x == [10.0 * i for i in range(120)]
        assert raw == pytest.approx(values)
        page.locator("#smoothing").fill("0.9")
        wait_for(page, "window.__watch.chart('losses/value').drawn.length === 3")
        x, faint, smooth = drawn(page, "losses/value")
        assert faint == pytest.approx(values)  # the raw line stays, faint, behind
        assert smooth == pytest.approx(tensorboard_smoothing(values, 0.9))
        assert max(abs(a - b) for a, b in zip(smooth, values, strict=True)) > 0.05

        # x axis: wall time and seconds since the run started
        page.locator("#x-mode").select_option("wall")
        wait_for(page, "window.__watch.chart('losses/value').mode === 'wall'")
        assert drawn(page, "losses/value")[0][:3] == [1_800_000_000.0, 1_800_000_001.0, 1.8e9 + 2]
        page.locator("#x-mode").select_option("relative")
        wait_for(page, "window.__watch.chart('losses/value').mode === 'relative'")
        rel = drawn(page, "losses/value")[0]
        assert rel[1] - rel[0] == pytest.approx(1.0) and rel == sorted(rel)
        page.locator("#x-mode").select_option("step")

        # agents: one chart with a line each, or a chart per agent
        labels = "window.__watch.chart('reward').lines.map(l => l.label).sort().join()"
        assert wait_for(page, labels) == "blue,red"
        page.locator("#split-agents").check()
        wait_for(
            page, f"{names} === 'charts/sps,losses/policy,losses/value,reward [blue],reward [red]'"
        )
        page.locator("#split-agents").uncheck()

        # live: points stored later are drawn without a reload
        more = fill(run, seed=1, n=30, first=120)
        wait_for(page, "window.__watch.chart('losses/value').drawn[0].length === 150")
        x, faint, smooth = drawn(page, "losses/value")
        assert faint[-30:] == pytest.approx(more)
        # the live points continue the average of those before (the chart smooths only where
        # the line grew): the smoothed line is that of the whole series, not one restarted
        assert smooth == pytest.approx(tensorboard_smoothing(values + more, 0.9))

        # zoom: a drag across the plot narrows x; a double-click gives it back
        over = page.locator('[data-chart="losses/value"] .u-over')
        box = over.bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.2, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
        page.mouse.up()
        zoom = wait_for(page, "window.__watch.chart('losses/value').zoomed()")
        assert 0 < zoom[0] < zoom[1] < 1490

        # the download is what the chart shows: the points inside the zoom, raw and smoothed
        with page.expect_download() as got:
            page.locator('[data-chart="losses/value"] button[data-format="csv"]').click()
        rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text())))
        steps = [int(r["step"]) for r in rows]
        assert steps and zoom[0] <= steps[0] and steps[-1] <= zoom[1]
        assert steps == list(range(steps[0], steps[-1] + 1, 10))
        assert {r["run_id"] for r in rows} == {"CHARTS-A"}
        assert {r["name"] for r in rows} == {"losses/value"}
        k = steps[0] // 10
        assert float(rows[0]["value"]) == pytest.approx((values + more)[k])
        smoothed = tensorboard_smoothing(values + more, 0.9)
        assert float(rows[0]["smoothed"]) == pytest.approx(smoothed[k])
        page.locator('[data-chart="losses/value"] .u-over').dblclick()
        wait_for(page, "window.__watch.chart('losses/value').zoomed() === null")
        with page.expect_download() as got:
            page.locator('[data-chart="losses/value"] button[data-format="json"]').click()
        body = json.loads(Path(got.value.path()).read_text())
        assert body["chart"] == "losses/value" and body["smoothing"] == pytest.approx(0.9)
        [line] = body["lines"]
        assert line["steps"] == [10 * i for i in range(150)]
        assert line["values"] == pytest.approx(values + more)
        # long lines at the same steps are thinned onto the pixel grid too, extremes kept
        page.evaluate("() => { charts.SHARED_LIMIT = 0.01; }")
        page.locator("#smoothing").fill("0.8")
        wait_for(page, "window.__watch.chart('losses/value').weight === 0.8")
        x, faint, smooth = drawn(page, "losses/value")
        assert len(x) % 4 == 0 and x == sorted(x) and len(faint) == len(x)
        kept = [v for v in faint if v is not None]
        assert max(kept) == max(values + more) and min(kept) == min(values + more)
        # a zoom reads the thinned lines again, finely inside it; a double-click: coarse again
        page.mouse.move(box["x"] + box["width"] * 0.3, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)
        page.mouse.up()
        chart = "window.__watch.chart('losses/value')"
        wait_for(page, f"{chart}.zoomed() && {chart}.dataZoom === {chart}.zoomed().join()")
        lo, hi = page.evaluate(f"() => {chart}.zoomed()")
        inside = [v for v in drawn(page, "losses/value")[0] if lo <= v <= hi]
        assert len(inside) >= 4 * 200  # the zoom's own pixel grid
        over.dblclick()
        wait_for(page, f"{chart}.zoomed() === null && {chart}.dataZoom === ''")
        page.screenshot(path=str(tmp_path / "charts.png"), full_page=True)
    finally:
        stop(watch)


def test_two_runs_overlaid_on_one_chart(page: Any, tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    first, second = FilledRun(store, "RUN-ONE"), FilledRun(store, "RUN-TWO")
    ones = fill(first, seed=1)
    twos = fill(second, seed=2)
    second.add_lines([metrics_line({"losses/value": math.nan}, step=5000)])  # a gap, not a crash
    for run, ret in ((first, 10.0), (second, 20.0)):
        run.add_episode(ret, 50)
        run.add_episode(ret + 1, 50)
    watch, base = start_watch(store)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/series/" in r.url else None)
    try:
        page.goto(f"{base}/compare?run=RUN-ONE&run=RUN-TWO&token={TOKEN}")
        labels = "window.__watch.chart('losses/value').lines.map(l => l.label).join()"
        assert wait_for(page, f"window.__watch.chart('losses/value') && {labels}") == (
            "RUN-ONE,RUN-TWO"
        )
        # the first look at both runs' series: one batch request, no request per run
        first_look = [urllib.parse.unquote(u) for u in asked]
        assert first_look and "/api/series/batch?" in first_look[0]
        assert '"RUN-ONE"' in first_look[0] and '"RUN-TWO"' in first_look[0]
        assert not any("/series/points" in u for u in first_look)
        page.locator("#smoothing").fill("0")
        wait_for(page, "window.__watch.chart('losses/value').drawn.length === 3")
        x, one, two = drawn(page, "losses/value")
        assert x == [10.0 * i for i in range(120)] + [5000.0]  # the runs' steps, joined
        assert one[:120] == pytest.approx(ones) and one[120] is None
        assert two[:120] == pytest.approx(twos) and two[120] is None  # NaN: drawn as a gap
        # long lines at different x are thinned onto a pixel grid, keeping each line's extremes
        page.evaluate("() => { charts.JOIN_LIMIT = 100; }")
        page.locator("#smoothing").fill("0.5")
        wait_for(page, "window.__watch.chart('losses/value').drawn.length === 5")
        x, raw_one, _, raw_two, _ = drawn(page, "losses/value")
        assert len(x) % 4 == 0 and len(x) >= 800 and x == sorted(x)  # 4 places a pixel
        for column, expected in ((raw_one, ones), (raw_two, twos)):
            kept = [v for v in column if v is not None]
            assert len(kept) < len(x) and max(kept) == max(expected) and min(kept) == min(expected)
        returns = "window.__watch.chart('episode return').lines.length"
        assert wait_for(page, f"window.__watch.chart('episode return') && {returns}") == 2
        assert page.locator("#series-list li").count() == 10  # 5 series of each run
        page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    finally:
        stop(watch)


def test_an_upstream_style_workers_own_events_are_charts(page: Any, tmp_path: Path) -> None:
    """A worker written to the metrics guide of before (its own ``train_metrics`` lifecycle
    events, nested losses) gets its curves without a change."""
    store = tmp_path / "runs.sqlite"
    run = FilledRun(store, "UPSTREAM")
    losses = noisy(3, 40)
    run.add_lines(
        [
            json.dumps(
                {
                    "type": "lifecycle",
                    "event": "train_metrics",
                    "payload": {"global_step": 512 * i, "losses": {"policy": v, "value": 2 * v}},
                }
            )
            for i, v in enumerate(losses)
        ]
    )
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/runs/UPSTREAM?token={TOKEN}")
        names = "window.__watch.seriesCharts.join()"
        assert wait_for(page, f"{names}.includes('value') && {names}") == (
            "train_metrics/losses.policy,train_metrics/losses.value"
        )
        page.locator("#smoothing").fill("0")
        wait_for(page, "window.__watch.chart('train_metrics/losses.policy').drawn.length === 2")
        x, policy = drawn(page, "train_metrics/losses.policy")
        assert x == [512.0 * i for i in range(40)] and policy == pytest.approx(losses)
    finally:
        stop(watch)


def test_a_long_series_comes_downsampled_and_zoom_and_download_read_every_point(
    page: Any, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    run = FilledRun(store, "LONG")
    n = 6000  # more than twice the page's width (1280 px): the server downsamples
    values = [math.sin(i / 300) + 0.1 * random.Random(i).random() for i in range(n)]
    values[4321] = 25.0  # a spike the coarse picture keeps
    run.add_lines(
        [
            metrics_line({"loss": v}, step=i, ts_ns=T0 + i * 1_000_000_000)
            for i, v in enumerate(values)
        ]
    )
    watch, base = start_watch(store)
    chart = "window.__watch.chart('loss')"
    try:
        page.goto(f"{base}/runs/LONG?token={TOKEN}")
        wait_for(page, f"window.__watch.seriesCharts.join() === 'loss' && {chart}.drawnAt")
        page.locator("#smoothing").fill("0")
        wait_for(page, f"{chart}.drawn.length === 2")
        x, y = drawn(page, "loss")
        assert page.evaluate(f"() => {chart}.source[0].downsampled") is True
        assert 1280 < len(x) <= 2 * 1280  # each pixel column's lowest and highest point
        assert max(y) == 25.0 and x[y.index(25.0)] == 4321
        assert all(values[int(s)] == v for s, v in zip(x, y, strict=True))  # real points

        # a zoom reads its range again: every point inside it
        over = page.locator('[data-chart="loss"] .u-over')
        box = over.bounding_box()
        mid = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.4, mid)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.55, mid, steps=5)
        page.mouse.up()
        wait_for(page, f"{chart}.zoomed() && {chart}.refines === 1")
        lo, hi = page.evaluate(f"() => {chart}.zoomed()")
        x, y = drawn(page, "loss")
        inside = [int(s) for s in x if lo <= s <= hi]
        first, last = math.ceil(lo), math.floor(hi)
        assert inside == list(range(first, last + 1))
        assert [v for s, v in zip(x, y, strict=True) if lo <= s <= hi] == values[first : last + 1]

        # the download (zoomed): every stored point inside the zoom
        with page.expect_download() as got:
            page.locator('[data-chart="loss"] button[data-format="csv"]').click()
        rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text())))
        assert [int(r["step"]) for r in rows] == list(range(first, last + 1))
        assert [float(r["value"]) for r in rows] == values[first : last + 1]

        # zoomed out: the coarse lines again; the download still has every point
        over.dblclick()
        wait_for(page, f"{chart}.zoomed() === null && {chart}.detail === null")
        assert len(drawn(page, "loss")[0]) <= 2 * 1280
        with page.expect_download() as got:
            page.locator('[data-chart="loss"] button[data-format="json"]').click()
        [line] = json.loads(Path(got.value.path()).read_text())["lines"]
        assert line["steps"] == list(range(n)) and line["values"] == values

        # live: a point stored later is drawn after the coarse ones
        run.add_lines([metrics_line({"loss": -7.0}, step=n, ts_ns=T0 + n * 1_000_000_000)])
        wait_for(page, f"{chart}.drawn[0][{chart}.drawn[0].length - 1] === {n}")
        assert drawn(page, "loss")[1][-1] == -7.0
    finally:
        stop(watch)
