"""Arguments that are not UTF-8 (bytes a shell passes through, which Python's argv holds as
lone surrogates) reach the store's lookups as text it can bind: ``mosaic runs show``,
``runs plot``, ``control``, ``runs list --worker`` and ``runs export --agent`` ended in a
``UnicodeEncodeError`` traceback from SQLite (issue 24's hostile pass)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter

RAW = b"\xff"  # not UTF-8: argv holds it as "\udcff"


def _store_with_agents(path: Path) -> None:
    """One run whose steps come from agents "a" and "\\udcff" (a name read from a disk that
    is not UTF-8, escaped by the JSON encoder as the worker wrote it)."""
    with RunStore(path) as store:
        store.create_run("R1", "fixture")
    ingest, batch = LineIngest("R1"), LineBatch(serial=1)
    lines = [
        {"type": "step", "episode_index": 0, "step_index": i, "reward": 1.0, "agent_id": a}
        for i, a in enumerate(["a", "\udcff", "\udcff"])
    ]
    ingest.add(batch, [json.dumps(d).encode() for d in lines])
    writer = StoreWriter(path, "R1")
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0


def _mosaic(*args: bytes | str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    argv = [os.fsencode(sys.executable), b"-m", b"mosaic_sdk.cli"]
    argv += [a if isinstance(a, bytes) else a.encode() for a in args]
    env = {**os.environ, "MOSAIC_HOME": str(cwd / "home"), "LC_ALL": "C.UTF-8"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "show", RAW),
        ("runs", "plot", RAW, "-o", "x.png"),
        ("control", RAW, "ping"),
    ],
    ids=["runs show", "runs plot", "control"],
)
def test_a_run_id_that_is_not_utf8_is_an_unknown_run_not_a_traceback(
    tmp_path: Path, args: tuple[bytes | str, ...]
) -> None:
    _store_with_agents(tmp_path / "s.sqlite")
    done = _mosaic(*args, "--store", "s.sqlite", cwd=tmp_path)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert "no run '\\\\udcff' in the store" in err


def test_runs_list_filtered_by_a_worker_name_that_is_not_utf8(tmp_path: Path) -> None:
    _store_with_agents(tmp_path / "s.sqlite")
    done = _mosaic("runs", "list", "--worker", RAW, "--store", "s.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr and b"R1" not in done.stdout
    assert done.stdout.decode() == (
        "No runs of worker '\\\\udcff' in the store; `mosaic runs list` shows them all.\n"
    )


def test_export_filtered_by_an_agent_name_typed_as_raw_bytes_finds_its_rows(
    tmp_path: Path,
) -> None:
    """The agent "\\udcff" is stored as its escape; the same bytes on the command line (as
    ``os.listdir`` would give them to a shell) select exactly its two steps."""
    _store_with_agents(tmp_path / "s.sqlite")
    done = _mosaic(
        "runs", "export", "R1", "--agent", RAW, "--store", "s.sqlite", "-o", "-", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    rows = list(csv.DictReader(io.StringIO(done.stdout.decode())))
    assert [r["step_index"] for r in rows] == ["1", "2"]
    assert {r["agent_id"] for r in rows} == {"\\udcff"}
