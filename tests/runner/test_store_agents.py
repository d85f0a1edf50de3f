"""Multi-agent basics: ``agent_id`` columns (indexed), the migration of a version-2 store, and
``mosaic runs show`` broken down per agent."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.storage.schema import SCHEMA_VERSION
from mosaic_sdk.runner.storage.store import RunStore
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
        assert _columns(conn, "episodes")[-2:] == ["agent_id", "unfinished"]  # 8 added the flag
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


def test_non_string_agent_ids_are_refused_not_merged_into_text(tmp_path: Path) -> None:
    # issue 30: 5 and "5" (True and "True") became one agent once stored as text
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.create_run("R", "fixture")
    ingest, batch = LineIngest("R"), LineBatch(serial=1)
    step = {"type": "step", "episode_index": 0, "step_index": 0, "reward": 1.0}
    raws = [
        {**step, "agent_id": "5"},
        {**step, "agent_id": 5},
        {**step, "agent_id": "True"},
        {**step, "agent_id": True},
        {**step, "agent_id": [1, 2]},
        {**step, "agent_id": {"a": 1}},
        {**step, "agent_id": 5.0},
        {**step, "agent_id": "\ud800"},  # a string, if not UTF-8: kept, escaped
        {**step, "agent_id": None},  # null: a line without an agent
        {"type": "episode", "episode_index": 0, "total_reward": 1.0, "agent_id": 5},
    ]
    ingest.add(batch, [json.dumps(d).encode() for d in raws])
    writer = StoreWriter(path, "R")
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    assert ingest.steps == 4 and ingest.episodes == 0 and ingest.invalid_lines == 6
    conn = sqlite3.connect(path)
    stored = conn.execute("SELECT line_no, agent_id FROM steps ORDER BY line_no").fetchall()
    logs = conn.execute("SELECT line_no, kind, error, text FROM log_lines ORDER BY line_no")
    logs = logs.fetchall()
    episodes = conn.execute("SELECT count(*) FROM episodes").fetchone()
    conn.close()
    assert stored == [(1, "5"), (3, "True"), (8, "\\ud800"), (9, None)]
    assert episodes == (0,)
    assert [(n, kind) for n, kind, _, _ in logs] == [(n, "invalid") for n in (2, 4, 5, 6, 7, 10)]
    errors = [error for _, _, error, _ in logs]
    assert errors[0] == (
        "agent_id must be a string (or null), got a JSON number 5; write the agent's id as text"
    )
    assert "a JSON boolean true" in errors[1] and "a JSON array [1, 2]" in errors[2]
    assert "a JSON object" in errors[3] and "a JSON number 5.0" in errors[4]
    # every refused line is kept as written
    assert [json.loads(t) for _, _, _, t in logs] == [raws[i] for i in (1, 3, 4, 5, 6, 9)]


def test_a_run_with_a_number_agent_id_shows_it_as_invalid_lines_not_an_agent(
    capsys: pytest.CaptureFixture[str], io_worker: str, tmp_path: Path
) -> None:
    step = {"type": "step", "episode_index": 0, "reward": 1.0}
    lines = [
        {"type": "lifecycle", "event": "run_started", "run_id": "numbers", "payload": {}},
        {**step, "step_index": 0, "agent_id": "5"},
        {**step, "step_index": 1, "agent_id": 5},
        {**step, "step_index": 2, "agent_id": "6"},
        {"type": "episode", "episode_index": 0, "total_reward": 2.0, "agent_id": "5"},
        {"type": "episode", "episode_index": 0, "total_reward": 9.0, "agent_id": 5},
        {"type": "lifecycle", "event": "run_completed", "run_id": "numbers", "payload": {}},
    ]
    out = tmp_path / "out"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "err").write_text("")
    store = tmp_path / "runs.sqlite"
    code = main(
        ["run", io_worker, "--store", str(store), "--run-id", "numbers", "--no-preflight"]
        + ["--set", "mode=replay", "--set", f"path={out}"]
        + ["--set", f"stderr_file={tmp_path / 'err'}"]
    )
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["runs", "show", "numbers", "--store", str(store), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["counts"]["steps"] == 2 and shown["counts"]["episodes"] == 1
    assert shown["counts"]["invalid_lines"] == 2
    agents = {a["agent_id"]: (a["steps"], a["episodes"]) for a in shown["agents"]}
    assert agents == {"5": (1, 1), "6": (1, 0)}


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
