"""Multi-agent basics: ``agent_id`` columns (indexed), the migration of a version-2 store, and
``mosaic runs show`` broken down per agent."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from mosaic_sdk.runner.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.schema import SCHEMA_VERSION
from mosaic_sdk.runner.store import RunStore

from mosaic_sdk.cli import main
from mosaic_sdk.runner.supervisor import run_worker

V2_SQL = Path(__file__).resolve().parent / "fixtures" / "store_v2.sql"


def _v2_store(path: Path) -> Path:
    """A store laid out as version 2 wrote it, holding one finished run with a step and an
    episode (no agent_id anywhere)."""
    conn = sqlite3.connect(path)
    conn.executescript(V2_SQL.read_text())
    conn.execute(
        "INSERT INTO runs (run_id, worker, status, started_at, ended_at, steps, episodes)"
        " VALUES ('OLD', 'fixture', 'completed', 1.0, 2.0, 1, 1)"
    )
    conn.execute(
        "INSERT INTO steps VALUES ('OLD', 2, 1, 0, 0, 1.5, 0, 0, 10, '{\"type\":\"step\"}')"
    )
    conn.execute(
        "INSERT INTO episodes VALUES ('OLD', 3, 2, 0, 1.5, 1, 1, 0, 11, '{\"type\":\"episode\"}')"
    )
    conn.commit()
    conn.close()
    return path


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def test_a_version_2_store_migrates_keeping_its_rows(tmp_path: Path) -> None:
    path = _v2_store(tmp_path / "old.sqlite")
    with RunStore(path) as store:  # opening for writing migrates
        run = store.get_run("OLD")
        assert run["counts"]["steps"] == 1 and run["observers"] == []
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        assert _columns(conn, "steps")[-1] == "agent_id"
        assert _columns(conn, "episodes")[-1] == "agent_id"
        assert "observers_json" in _columns(conn, "runs")
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"steps_by_agent", "episodes_by_agent"} <= indexes
        assert conn.execute("SELECT reward, raw, agent_id FROM steps").fetchall() == [
            (1.5, '{"type":"step"}', None)
        ]
        assert conn.execute("SELECT total_reward, agent_id FROM episodes").fetchall() == [
            (1.5, None)
        ]
        # the per-agent query uses the index
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT agent_id, count(*) FROM steps"
            " WHERE run_id = 'OLD' AND agent_id IS NOT NULL GROUP BY agent_id"
        ).fetchall()
        assert "steps_by_agent" in " ".join(str(r) for r in plan)
    finally:
        conn.close()
    # opening it again is a no-op, and a writer stores agent ids into the migrated tables
    with RunStore(path) as store:
        store.create_run("NEW", "fixture")
    ingest, batch = LineIngest("NEW"), LineBatch(serial=1)
    lines = [
        {"type": "step", "episode_index": 0, "step_index": i, "reward": 1.0, "agent_id": a}
        for i, a in enumerate(["a", "b", "a"])
    ]
    lines.append(
        {
            "type": "episode",
            "episode_index": 0,
            "total_reward": 2.0,
            "steps": 2,
            "terminated": True,
            "truncated": False,
            "agent_id": "a",
        }
    )
    ingest.add(batch, [json.dumps(d).encode() for d in lines])
    writer = StoreWriter(path, "NEW")
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    with RunStore(path, readonly=True) as store:
        assert store.agents("NEW") == [
            {"agent_id": "a", "steps": 2, "env_steps": 2, "episodes": 1, "mean_return": 2.0}
            | {"min_return": 2.0, "max_return": 2.0, "last_return": 2.0},
            {"agent_id": "b", "steps": 1, "env_steps": 1, "episodes": 0, "mean_return": None}
            | {"min_return": None, "max_return": None, "last_return": None},
        ]
        assert store.agents("OLD") == []  # one group (no ids): nothing to break down


def test_a_version_2_store_read_only_shows_runs_without_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _v2_store(tmp_path / "old.sqlite")
    assert main(["runs", "show", "OLD", "--store", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["agents"] == [] and shown["observers"] == []
    conn = sqlite3.connect(path)
    assert "agent_id" not in _columns(conn, "steps")  # reading changed nothing
    conn.close()


def test_non_string_agent_ids_are_stored_as_text(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.create_run("R", "fixture")
    ingest, batch = LineIngest("R"), LineBatch(serial=1)
    raws = [
        {"type": "step", "episode_index": 0, "step_index": 0, "reward": 1.0, "agent_id": 7},
        {"type": "step", "episode_index": 0, "step_index": 1, "reward": 1.0, "agent_id": [1]},
        {"type": "step", "episode_index": 0, "step_index": 2, "reward": 1.0, "agent_id": "\ud800"},
    ]
    ingest.add(batch, [json.dumps(d).encode() for d in raws])
    writer = StoreWriter(path, "R")
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    conn = sqlite3.connect(path)
    got = conn.execute("SELECT agent_id FROM steps ORDER BY line_no").fetchall()
    conn.close()
    assert got == [("7",), ("[1]",), ("\\ud800",)]


def test_runs_show_breaks_a_multi_agent_run_down_per_agent(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_worker("fixture", {"mode": "agents", "lines": 6}, store=store_path)
    assert result.status == "completed", result.error
    capsys.readouterr()
    assert main(["runs", "show", result.run_id, "--store", str(store_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["agents"] == [
        {"agent_id": "blue", "steps": 2, "env_steps": 2, "episodes": 1, "mean_return": -1.0}
        | {"min_return": -1.0, "max_return": -1.0, "last_return": -1.0},
        {"agent_id": "red", "steps": 6, "env_steps": 6, "episodes": 2, "mean_return": 2.0}
        | {"min_return": 1.0, "max_return": 3.0, "last_return": 3.0},
    ]
    assert main(["runs", "show", result.run_id, "--store", str(store_path)]) == 0
    text = capsys.readouterr().out
    assert "per agent (2 agents):" in text
    table = text.split("per agent (2 agents):")[1].splitlines()
    assert table[2].split() == ["blue", "2", "2", "1", "-1.000", "-1.000"]
    assert table[3].split() == ["red", "6", "6", "2", "2.000", "3.000"]
    assert shown["counts"] | {"events": 0} == shown["counts"] | {
        "env_steps": 8,
        "step_lines": 8,
        "games": 2,  # red's episodes 0 and 1, blue's 0
        "agent_episodes": 3,
        "events": 0,
    }


def test_runs_show_of_a_single_agent_run_has_no_breakdown(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_worker("fixture", {"lines": 4}, store=store_path)
    capsys.readouterr()
    assert main(["runs", "show", result.run_id, "--store", str(store_path)]) == 0
    assert "per agent" not in capsys.readouterr().out
    assert main(["runs", "show", result.run_id, "--store", str(store_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agents"] == []
