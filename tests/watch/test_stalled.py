"""`mosaic watch` shows a stalled run as stalled: the API's ``stalled`` field and status text
(the text `mosaic runs` shows), and the runs and run pages in a real browser."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.runner.recording.health import RECOVERED_EVENT, STALLED_EVENT
from mosaic_sdk.watch.browser import chromium_path, headless_chromium
from tests.watch.conftest import TOKEN
from tests.watch.storefill import FilledRun


def stall(store: Path, run_id: str, recovered: bool = False) -> FilledRun:
    run = FilledRun(store, run_id)  # running, its runner (this process) alive
    run.add_event("run_started", {"worker_type": "example"})
    payload = {
        "silent_seconds": 3.0,
        "limit_seconds": 3.0,
        "limit_from": "set by the runner",
        "last_line_unix": time.time() - 3.0,
        "last_heartbeat_unix": None,
        "heartbeat_interval": None,
    }
    run.add_event(STALLED_EVENT, payload, synthesised=True)
    if recovered:
        run.add_event(RECOVERED_EVENT, {"silent_seconds": 4.0}, synthesised=True)
    return run


def test_the_api_says_a_running_run_is_stalled(client: TestClient, store: Path) -> None:
    stall(store, "stuck")
    stall(store, "fine-again", recovered=True)
    FilledRun(store, "healthy")
    rows = {r["run_id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert rows["stuck"]["stalled"]["limit_seconds"] == 3.0
    assert rows["stuck"]["status"].startswith("running (stalled: no output for ")
    assert rows["stuck"]["status"].endswith(", limit 3 s)")
    assert rows["fine-again"]["stalled"] is None and rows["fine-again"]["status"] == "running"
    assert rows["healthy"]["stalled"] is None
    detail = client.get("/api/runs/stuck").json()
    assert detail["stalled"]["limit_from"] == "set by the runner"
    assert detail["status"].startswith("running (stalled: no output for ")
    running = client.get("/api/runs?status=running").json()["runs"]
    assert {r["run_id"] for r in running} == {"stuck", "fine-again", "healthy"}


def test_a_worker_event_named_stalled_is_not_the_runners(client: TestClient, store: Path) -> None:
    run = FilledRun(store, "liar")
    run.add_event(STALLED_EVENT, {"silent_seconds": 1, "limit_seconds": 1})  # not synthesised
    [row] = client.get("/api/runs").json()["runs"]
    assert row["stalled"] is None and row["status"] == "running"


def test_an_ended_run_is_not_stalled(client: TestClient, store: Path) -> None:
    stall(store, "ended").finish("failed")
    [row] = client.get("/api/runs").json()["runs"]
    assert row["stalled"] is None and row["status"] == "failed"


@pytest.mark.skipif(
    not os.path.exists(chromium_path()),
    reason="Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)",
)
def test_the_pages_show_a_stalled_run(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api", reason="playwright (the test extra)")
    from tests.watch.processes import start_watch, stop

    stall(store, "stuck")
    FilledRun(store, "healthy")
    watch, base = start_watch(store)
    try:
        with headless_chromium(chromium_path()) as browser:
            page: Any = browser.new_context().new_page()
            page.goto(f"{base}/?token={TOKEN}")
            row = page.locator('tr[data-run="stuck"]')
            row.wait_for(timeout=60_000)
            cell = row.locator("td.status")
            assert "running (stalled: no output for " in cell.inner_text()
            assert "stalled" in (cell.get_attribute("class") or "").split()
            healthy = page.locator('tr[data-run="healthy"] td.status')
            assert "stalled" not in (healthy.get_attribute("class") or "").split()
            page.screenshot(path=str(tmp_path / "runs-stalled.png"))
            row.locator("a").click()
            page.wait_for_url("**/runs/stuck*")
            page.wait_for_function(
                "() => document.querySelector('#summary tbody') && "
                "document.querySelector('#summary tbody').textContent.includes('stalled')",
                timeout=60_000,
            )
    finally:
        stop(watch)
