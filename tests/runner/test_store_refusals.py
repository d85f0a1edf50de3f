"""A store this SDK cannot use is refused in one line and left exactly as it was: one written
by a newer SDK (a greater ``schema_version``) is never migrated "down", and a truncated or
corrupt file keeps no ``-wal`` or ``-shm`` file of ours beside it (issue 30, items 2 and 11)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.runner.storage.schema import SCHEMA_VERSION, StoreError, connect, connect_readonly
from mosaic_sdk.runner.storage.store import RunStore


def fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_mtime_ns, stat.st_size


def sidecars(path: Path) -> list[str]:
    """The files beside ``path`` whose names begin with its own (its -wal, -shm, -journal)."""
    return sorted(
        p.name for p in path.parent.iterdir() if p.name.startswith(path.name) and p != path
    )


def store_of_version(path: Path, version: str) -> None:
    """A store with one finished run whose meta says ``version`` (as a newer SDK leaves it)."""
    with RunStore(path) as store:
        store.create_run("r-newer", "example")
        store.finish_run("r-newer", "completed", 0)
        store.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    assert sidecars(path) == []  # the last connection took its -wal and -shm away


@pytest.mark.parametrize("newer", [SCHEMA_VERSION + 1, 99])
def test_a_store_of_a_newer_sdk_is_refused_untouched(tmp_path: Path, newer: int) -> None:
    path = tmp_path / "store.sqlite"
    store_of_version(path, str(newer))
    before = fingerprint(path)
    for opening in (connect, connect_readonly, RunStore):
        with pytest.raises(StoreError) as refused:
            opening(path)
        said = str(refused.value)
        assert "\n" not in said
        assert f"schema version {newer}" in said
        assert f"store schema version {SCHEMA_VERSION}" in said
        assert "upgrade" in said and "--store" in said
        assert fingerprint(path) == before
        assert sidecars(path) == []
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        kept = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    finally:
        conn.close()
    assert kept == (str(newer),)
    # an older store is still brought up to this SDK's version
    older = tmp_path / "older.sqlite"
    store_of_version(older, str(SCHEMA_VERSION - 1))
    with RunStore(older) as store:
        assert store.get_run("r-newer")["status"] == "completed"
        version = store.conn.execute("SELECT value FROM meta").fetchone()
        assert version == {"value": str(SCHEMA_VERSION)}


def test_a_version_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store_of_version(path, "five")
    before = fingerprint(path)
    with pytest.raises(StoreError, match="schema version 'five'"):
        connect(path)
    assert fingerprint(path) == before


def test_mosaic_run_and_runs_list_refuse_a_newer_store_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "store.sqlite"
    store_of_version(path, "99")
    before = fingerprint(path)
    for argv in (
        ["runs", "list", "--store", str(path)],
        ["run", "example", "--store", str(path), "--set", "episodes=1"],
    ):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code != 0, out
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, err
        assert "schema version 99" in lines[0]
        assert f"store schema version {SCHEMA_VERSION}" in lines[0]
        assert fingerprint(path) == before
        assert sidecars(path) == [], argv
    assert not (tmp_path / "store").exists()  # no run directory either


def truncated(tmp_path: Path, name: str, fraction: float) -> Path:
    source = tmp_path / "whole.sqlite"
    if not source.exists():
        with RunStore(source) as store:
            for i in range(40):
                store.create_run(f"r{i}", "example", config={"pad": "x" * 2000})
    data = source.read_bytes()
    path = tmp_path / "bad" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data[: int(len(data) * fraction)])
    return path


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.9])
def test_a_truncated_store_leaves_no_wal_or_shm_behind(tmp_path: Path, fraction: float) -> None:
    path = truncated(tmp_path, "store.sqlite", fraction)
    before = fingerprint(path)
    for opening in (connect, connect_readonly):
        with pytest.raises(StoreError, match="malformed"):
            opening(path)
        assert sidecars(path) == [], opening
        assert fingerprint(path) == before
    garbage = path.with_name("garbage.sqlite")  # not a database at all: the same
    garbage.write_bytes(b"not a database " * 1000)
    for opening in (connect, connect_readonly):
        with pytest.raises(StoreError, match="not a database"):
            opening(garbage)
        assert sidecars(garbage) == []


def test_the_sidecars_of_another_connection_are_left_alone(tmp_path: Path) -> None:
    """A refusal removes only the -wal and -shm it made: a newer SDK's live writer keeps its."""
    path = tmp_path / "store.sqlite"
    store_of_version(path, "99")
    writer = sqlite3.connect(path)  # stays open: its -wal and -shm are in use
    try:
        writer.execute("SELECT count(*) FROM runs").fetchone()
        held = sidecars(path)
        assert held == ["store.sqlite-shm", "store.sqlite-wal"]
        with pytest.raises(StoreError, match="schema version 99"):
            connect(path)
        assert sidecars(path) == held
    finally:
        writer.close()
