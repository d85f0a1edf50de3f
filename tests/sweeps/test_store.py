"""The sweeps tables: the schema step that adds them to an older store, and reading a store
that has none."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from mosaic_sdk.runner.storage.schema import SCHEMA_VERSION
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.spec import Metric
from mosaic_sdk.sweeps.store import SweepStore


def _make_version_2(path: Path) -> None:
    RunStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE sweeps")
    conn.execute("DROP TABLE sweep_trials")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_a_version_2_store_gets_the_sweeps_tables_when_opened_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _make_version_2(path)
    with RunStore(path) as runs:
        sweeps = SweepStore(runs)
        sweeps.create_sweep("S1", "example", "local", {"seeds": [1]}, Metric())
        runs.create_run("R1", "example")
        assert sweeps.add_attempt("S1", "t0000", "R1", {"seed": 1}) == 1
        assert sweeps.add_attempt("S1", "t0000", "R2", {"seed": 1}) == 2
        sweeps.finish_attempt("R1", "cancelled", None)
        sweeps.finish_attempt("R2", "completed", 3.0)
        assert sweeps.finished_keys("S1") == {"t0000"}
        version = runs.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version.fetchone()["value"] == str(SCHEMA_VERSION) == "9"


def test_sweeps_list_on_a_store_without_sweeps_tables_says_so(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _make_version_2(path)
    cli = [sys.executable, "-m", "mosaic_sdk.cli", "sweeps"]
    listed = subprocess.run([*cli, "list", "--store", str(path)], capture_output=True, text=True)
    assert listed.returncode == 0 and "No sweeps" in listed.stdout
    shown = subprocess.run(
        [*cli, "show", "X", "--store", str(path)], capture_output=True, text=True
    )
    assert shown.returncode == 2 and "no sweeps in the store" in shown.stderr


def _make_version_5(path: Path) -> None:
    """A store as schema 5 left it: sweep_trials without parent_run_id, one attempt in it."""
    with RunStore(path) as runs:
        sweeps = SweepStore(runs)
        sweeps.create_sweep("S1", "example", "ray", {"seeds": [1]}, Metric())
        runs.create_run("R1", "example")
        sweeps.add_attempt("S1", "t0000", "R1", {"seed": 1})
        sweeps.finish_attempt("R1", "completed", 2.0)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE sweep_trials DROP COLUMN parent_run_id")
    conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_a_version_5_store_reads_without_parents_and_gains_the_column_when_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    _make_version_5(path)
    with RunStore(path, readonly=True) as runs:  # read as it is: nothing written
        [trial] = SweepStore(runs).trials("S1")
        assert trial["parent_run_id"] is None and trial["metric"] == 2.0
    with RunStore(path) as runs:  # opened for writing: migrated to 6
        sweeps = SweepStore(runs)
        runs.create_run("R2", "example")
        assert sweeps.add_attempt("S1", "t0000", "R2", {"seed": 1}, parent_run_id="R1") == 2
        parents = {t["run_id"]: t["parent_run_id"] for t in sweeps.trials("S1")}
        assert parents == {"R1": None, "R2": "R1"}
