"""Helpers of the sweep tests: processes and shared-memory segments left behind, and an
observer plugin that keeps what it is given (import them as ``tests.sweeps.conftest``: a bare
``conftest`` is another directory's in a whole run)."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk import hookimpl
from mosaic_sdk.runner.recording.observers import EpisodeRow, StepRow


class Seen:
    """An observer plugin: keeps every row and event it is given, per run (``events``: the
    events; ``named``: ``"worker:event"`` of each; ``workers``: the workers named)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: dict[str, list[StepRow]] = {}
        self.episodes: dict[str, list[EpisodeRow]] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.named: dict[str, list[str]] = {}
        self.workers: set[str] = set()

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
        with self.lock:
            self.steps.setdefault(run_id, []).extend(steps)

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list[EpisodeRow]) -> None:
        with self.lock:
            self.episodes.setdefault(run_id, []).extend(episodes)

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.setdefault(run_id, []).append(event)
            self.named.setdefault(run_id, []).append(f"{worker}:{event['event']}")
            self.workers.add(worker)


def stored_rows(store: Path, table: str, run_id: str) -> list[tuple[Any, ...]]:
    """Every row of ``table`` of one run, in line order, as tuples (as an observer gets them)."""
    conn = sqlite3.connect(store)
    try:
        sql = f"SELECT * FROM {table} WHERE run_id = ? ORDER BY line_no"
        return conn.execute(sql, (run_id,)).fetchall()
    finally:
        conn.close()


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def worker_pids(store: Path) -> list[int]:
    conn = sqlite3.connect(store)
    try:
        rows = conn.execute("SELECT worker_pid FROM runs WHERE worker_pid IS NOT NULL").fetchall()
    finally:
        conn.close()
    return [int(r[0]) for r in rows]


def mosaic_segments() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("mosaic")}
    except FileNotFoundError:
        return set()


@pytest.fixture
def shm_unchanged(tmp_path: Path):
    """Fail when a run of this test (any store under its tmp_path) leaves a segment in
    /dev/shm. Other processes of the machine make and remove segments meanwhile: only those
    named after this test's runs are judged."""
    before = mosaic_segments()
    yield
    ours: set[str] = set()
    for store in tmp_path.rglob("*.sqlite"):
        conn = sqlite3.connect(store)
        try:
            ours.update(r[0] for r in conn.execute("SELECT run_id FROM runs"))
        except sqlite3.OperationalError:
            pass
        finally:
            conn.close()
    left = {name for name in mosaic_segments() - before if any(r in name for r in ours)}
    assert left == set()


RUNNER_FIXTURES = Path(__file__).resolve().parent.parent / "runner" / "fixtures"


@pytest.fixture
def fixture_worker(monkeypatch: pytest.MonkeyPatch) -> str:
    """The runner tests' ``fixture`` worker (tests/runner/fixtures/runner_workers.py: its
    ``mode`` config key says how it behaves, e.g. ``stubborn`` hangs and ignores SIGTERM),
    discoverable here and in child processes (Ray's included)."""
    monkeypatch.syspath_prepend(str(RUNNER_FIXTURES))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(RUNNER_FIXTURES) + (os.pathsep + old if old else ""))
    monkeypatch.setenv("MOSAIC_PLUGINS", "fixture=runner_workers:Fixture")
    return "fixture"
