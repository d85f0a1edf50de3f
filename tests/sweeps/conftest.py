"""Helpers of the sweep tests: processes and shared-memory segments left behind."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest


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
