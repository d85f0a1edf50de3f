"""`mosaic runs` and `mosaic watch` tell a run's status in the same words, for every status
(one function, mosaic_sdk.runner.storage.store.status_text, answers for both)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.cli import main
from mosaic_sdk.runner.storage.schema import STATUSES
from tests.watch.storefill import FilledRun

DEAD_PID = 2147483646  # no process can have it: the runner of a "running" run is gone


def fill(store: Path) -> list[str]:
    ids = []
    for status in STATUSES:
        run = FilledRun(store, f"st-{status}")
        if status != "running":
            run.finish(status)
        ids.append(run.run_id)
    FilledRun(store, "st-orphaned")
    conn = sqlite3.connect(store)
    with conn:
        conn.execute("UPDATE runs SET runner_pid = ? WHERE run_id = 'st-orphaned'", (DEAD_PID,))
    conn.close()
    return [*ids, "st-orphaned"]


def cli_status(capsys: pytest.CaptureFixture[str], store: Path, run_id: str) -> str:
    assert main(["runs", "show", run_id, "--store", str(store)]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.strip().startswith("status")]
    return line.strip().removeprefix("status").strip()


def test_runs_show_and_watch_say_the_same(
    client: TestClient, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = fill(store)
    listed = {r["run_id"]: r["status"] for r in client.get("/api/runs").json()["runs"]}
    shown = {}
    for run_id in ids:
        detail = client.get(f"/api/runs/{run_id}").json()["status"]
        assert detail == listed[run_id]
        shown[run_id] = cli_status(capsys, store, run_id)
    assert listed == shown
    assert shown["st-orphaned"] == f"running (runner died: pid {DEAD_PID} is gone)"
    assert {shown[f"st-{s}"] for s in STATUSES} == set(STATUSES)


def test_the_status_filter_still_finds_runs_whose_runner_died(
    client: TestClient, store: Path
) -> None:
    fill(store)
    body = client.get("/api/runs?status=running").json()
    assert {r["run_id"] for r in body["runs"]} == {"st-running", "st-orphaned"}
    assert body["statuses"] == sorted(STATUSES)
