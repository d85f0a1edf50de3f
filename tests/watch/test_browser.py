"""End to end in a real browser: Debian's Chromium, driven by Playwright, against
``mosaic watch`` on loopback while the example worker runs with FastLane.

Skipped only when Chromium is not installed (``.ci/run`` installs it, so CI runs these).
Screenshots go to the test's tmp_path for inspection.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink
from mosaic_sdk.watch.browser import chromium_path, headless_chromium
from tests.watch.conftest import TOKEN
from tests.watch.processes import start_run, start_watch, stop
from tests.watch.storefill import FilledRun
from tests.watch.test_control import FakeRunner

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    pytest.importorskip("playwright.sync_api", reason="playwright (the test extra)")
    with headless_chromium(CHROMIUM) as browser:
        yield browser


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def live_run(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A store with the example worker running in it, FastLane on; ended and cleaned after."""
    store = tmp_path / "runs.sqlite"
    run_id = f"e2e-{uuid.uuid4().hex[:10]}"
    config = tmp_path / "slow.json"
    config.write_text(
        json.dumps(
            {
                "episodes": 200,
                "max_steps_per_episode": 40,
                "step_delay_ms": 10,
                "policy": "random",
                "fastlane": True,
                "include_observations": False,
                "heartbeat_interval": 1,
            }
        )
    )
    proc = start_run(store, run_id, config, tmp_path / "run.log")
    try:
        yield store, run_id
    finally:
        stop(proc, interrupt=True)
        shm_unlink(segment_name(run_id))


def wait_for(page: Any, script: str, timeout: float = 60_000) -> Any:
    """Wait until ``script`` (an expression) is truthy; its value. Passed as a function, so
    the page's Content-Security-Policy (no eval) does not stop Playwright from checking it."""
    return page.wait_for_function(f"() => {script}", timeout=timeout).json_value()


def test_a_live_run_in_the_browser(page: Any, live_run: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = live_run
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/?token={TOKEN}")
        row = page.locator(f'tr[data-run="{run_id}"]')
        row.wait_for(timeout=60_000)
        assert "running" in row.inner_text() and "example" in row.inner_text()
        steps_cell = f"document.querySelector('tr[data-run=\"{run_id}\"] td:nth-child(6)')"
        wait_for(page, f"Number({steps_cell}.textContent) > 0")  # the list updates live
        page.screenshot(path=str(tmp_path / "runs-page.png"))

        row.locator("a").click()
        page.wait_for_url(f"**/runs/{run_id}*")
        first = wait_for(page, "window.__watch.frames >= 3 && window.__watch.lastSeq")
        page.screenshot(path=str(tmp_path / "run-page-1.png"))
        img = page.locator("#frame")
        one = img.screenshot()
        later = wait_for(page, f"window.__watch.lastSeq > {first} + 10 && window.__watch.lastSeq")
        assert later > first  # the page shows newer frames as they are published
        page.wait_for_timeout(300)
        assert img.screenshot() != one  # and they look different (the cart moves)
        assert "reward" in page.locator("#hud").inner_text().lower()

        points = wait_for(page, "window.__watch.curvePoints >= 1 && window.__watch.curvePoints")
        wait_for(page, f"window.__watch.curvePoints > {points}")  # the curve gains points
        # one line on the uPlot chart, drawn raw and smoothed: x, raw, smoothed columns
        drawn = "window.__watch.chart('episode return').drawn"
        assert page.evaluate(f"() => {drawn}.length") == 3
        wait_for(page, "window.__watch.events >= 2")
        assert "run_started" in page.locator("#events").inner_text()
        page.screenshot(path=str(tmp_path / "run-page-2.png"))
    finally:
        stop(watch)
    assert (tmp_path / "run-page-2.png").stat().st_size > 1000


def test_worker_text_is_shown_as_text_and_control_buttons_work(
    browser: Any, tmp_path: Path
) -> None:
    # Without the app's Content-Security-Policy: escaping alone must keep the text inert.
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    store = tmp_path / "runs.sqlite"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = FilledRun(store, "HOSTILE", run_dir=run_dir, control_protocol=1)
    script = "<script>window.__pwned = 1</script>"
    image = '<img src=x onerror="window.__pwned = 2">'
    run.add_log(script)
    run.add_event("run_started", {"note": image})
    run.add_episode(3.0, 3)
    fake = FakeRunner(run_dir / "control.sock")
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/runs/HOSTILE?token={TOKEN}")
        wait_for(page, "window.__watch.logs >= 1 && window.__watch.events >= 1")
        assert script in page.locator("#logs").inner_text()
        assert image.replace('"', '\\"') in page.locator("#events").inner_text()
        assert page.evaluate("() => window.__pwned === undefined")
        assert page.locator("#logs script, #events img").count() == 0
        page.locator("#controls button[data-cmd=pause]").click()
        wait_for(page, "document.getElementById('control-reply').textContent.includes('done')")
        assert fake.requests == [{"cmd": "pause"}]
        page.screenshot(path=str(tmp_path / "hostile-run.png"))

        # A worker that reads no commands: the page offers stop alone.
        deaf_dir = tmp_path / "deaf"
        deaf_dir.mkdir()
        FilledRun(store, "DEAF", run_dir=deaf_dir)
        deaf = FakeRunner(deaf_dir / "control.sock")
        try:
            page.goto(f"{base}/runs/DEAF?token={TOKEN}")
            page.locator("#controls button[data-cmd=stop]").wait_for(state="visible")
            shown = "[...document.querySelectorAll('#controls button')].filter(b => !b.hidden)"
            assert page.evaluate(f"() => {shown}.map(b => b.dataset.cmd)") == ["stop"]
            assert page.locator("#controls button[data-cmd=pause]").is_hidden()
        finally:
            deaf.close()

        page.goto(f"{base}/?token={TOKEN}")  # the runs page escapes too
        page.locator('tr[data-run="HOSTILE"]').wait_for()
        page.goto(f"{base}/compare?run=HOSTILE&run=NOPE")
        wait_for(page, "(window.__watch.chart('episode return') || {lines: []}).lines.length >= 1")
        assert "no run 'NOPE'" in page.locator("#notice").inner_text()
        page.screenshot(path=str(tmp_path / "compare.png"))
    finally:
        stop(watch)
        fake.close()
        context.close()


def test_a_missing_store_is_a_message_on_the_page(page: Any, tmp_path: Path) -> None:
    watch, base = start_watch(tmp_path / "nothing-here.sqlite")
    try:
        page.goto(base + "/")
        wait_for(page, "document.getElementById('notice').textContent.includes('no store')")
        page.goto(base + "/runs/NOPE")
        wait_for(page, "document.getElementById('notice').textContent.includes('no store')")
    finally:
        stop(watch)


def test_agents_worker_streams_and_evaluation_batches_on_the_run_page(
    page: Any, tmp_path: Path
) -> None:
    import numpy as np

    from mosaic_sdk.fastlane import FastLaneConfig, FastLaneWriter, agent_stream_id
    from tests.watch.test_agents_eval import _batch, multi_agent_run

    store = tmp_path / "runs.sqlite"
    run_id = f"MA-{uuid.uuid4().hex[:8]}"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = multi_agent_run(store, run_id, run_dir)  # eval_summary.json is in run_dir
    so_far: list[float] = []
    _batch(run, run_dir, 1, [1.0, 3.0], so_far)
    writers = []
    for n in (1, 2):
        w = FastLaneWriter.create(agent_stream_id(run_id, n - 1), FastLaneConfig(width=8, height=8))
        writers.append(w)
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/runs/{run_id}?token={TOKEN}")
        # one curve per agent, and a filter that hides one
        wait_for(page, "Object.keys(window.__watch.agentCurves).length === 2")
        assert page.locator("#agents tbody tr").count() == 2
        page.locator('#agent-filter input[data-key="agent=blue"]').uncheck()
        wait_for(page, "Object.keys(window.__watch.agentCurves).join() === 'red'")
        shown = "window.__watch.chart('episode return per agent').lines.map(l => l.label)"
        assert page.evaluate(f"() => {shown}") == ["red"]
        # one small view per worker stream, each with its own frames
        for i in range(40):
            for n, w in enumerate(writers, 1):
                w.publish(np.full((8, 8, 3), (60 * n + i) % 256, np.uint8))
            page.wait_for_timeout(50)
            done = page.evaluate(
                "() => Object.values(window.__watch.streamFrames).filter(n => n >= 2).length"
            )
            if done == 2:
                break
        counts = page.evaluate("() => window.__watch.streamFrames")
        assert set(counts) == {f"{run_id}-w1", f"{run_id}-w2"}, counts
        assert page.locator("#streams figure").count() == 2
        # evaluation batches appear as they arrive
        wait_for(page, "window.__watch.evalBatches === 1")
        _batch(run, run_dir, 2, [5.0, 9.0], so_far)
        wait_for(page, "window.__watch.evalBatches === 2")
        rows = page.locator("#eval tbody tr")
        assert rows.nth(1).inner_text().split() == ["2", "2", "7.00", "5.00", "9.00"]
        assert "4 of 6 episodes" in page.locator("#eval-info").inner_text()
        page.screenshot(path=str(tmp_path / "agents-eval.png"))
    finally:
        stop(watch)
        for w in writers:
            w.close()
            w.unlink()


def test_the_run_page_says_which_episodes_its_curve_skipped(page: Any, tmp_path: Path) -> None:
    """The sentence of the curve answer's ``skipped_text`` is shown under the chart (issue 30,
    item 13: no browser test looked at it, and blanking it in run.js passed)."""
    store = tmp_path / "runs.sqlite"
    run = FilledRun(store, "SKIPS")
    run.add_episode(1.0, 5)
    run.add_episode("abc", 5)  # type: ignore[arg-type]  # what a broken worker stores
    run.add_episode(float("inf"), 5)
    run.add_episode(2.0, 5)
    watch, base = start_watch(store)
    try:
        page.goto(f"{base}/runs/SKIPS?token={TOKEN}")
        wait_for(page, "window.__watch.curvePoints >= 2")
        wait_for(page, "document.getElementById('curve-skipped').textContent.length > 0")
        assert page.locator("#curve-skipped").inner_text() == (
            "2 episodes skipped: 1 with a return that is not a number, 1 with a return that is"
            " not finite (not on the curve)"
        )
    finally:
        stop(watch)
