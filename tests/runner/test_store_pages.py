"""A new store is made with 16 KiB pages; a store made with other pages keeps them and works."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mosaic_sdk.runner.storage.schema import PAGE_SIZE, connect
from mosaic_sdk.runner.storage.store import RunStore


def page_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def test_a_new_store_has_large_pages(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    connect(path).close()
    assert PAGE_SIZE == 16384
    assert page_size(path) == PAGE_SIZE


def test_an_older_store_keeps_its_pages_and_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.execute("PRAGMA page_size=4096")
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE before (x INTEGER)")
    old.execute("INSERT INTO before VALUES (1)")
    old.commit()
    old.close()
    with RunStore(path) as store:
        store.create_run("r1", "example")
    assert page_size(path) == 4096
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT x FROM before").fetchall() == [(1,)]
        assert conn.execute("SELECT run_id FROM runs").fetchall() == [("r1",)]
    finally:
        conn.close()
