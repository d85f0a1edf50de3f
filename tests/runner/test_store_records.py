"""The typed records of the store (``mosaic_sdk.runner.storage.records``) say what the read API
returns: every key of each record, no other, on a new store and on an older one read-only."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.recording.observers import ObserverReport
from mosaic_sdk.runner.storage.records import (
    AgentSummary,
    EpisodeRow,
    EventRecord,
    LogLineRecord,
    ObserverRecord,
    RunCounts,
    RunRecord,
    StepRow,
    columns_of,
)
from mosaic_sdk.runner.storage.schema import EPISODE_COLUMNS, STEP_COLUMNS
from mosaic_sdk.runner.storage.store import RunStore

V2_SQL = Path(__file__).resolve().parent / "fixtures" / "store_v2.sql"


def _store_with_a_run(path: Path) -> None:
    """One run of two agents: steps, an episode, a lifecycle event, a custom event, a log line
    and a line that is not telemetry (an ``invalid`` log line)."""
    with RunStore(path) as store:
        store.create_run("R", "fixture", config={"seed": 1, "env_id": "CartPole-v1"})
    ingest, batch = LineIngest("R"), LineBatch(serial=1)
    lines = [
        {"type": "lifecycle", "event": "run_started", "payload": {"worker": "fixture"}},
        {"type": "step", "episode_index": 0, "step_index": 0, "reward": 1.0, "agent_id": "a"},
        {"type": "step", "episode_index": 0, "step_index": 0, "reward": 1.0, "agent_id": "b"},
        {"type": "episode", "episode_index": 0, "total_reward": 2.0, "steps": 1, "agent_id": "a"},
        {"type": "lifecycle", "event": "train_metrics", "payload": {"loss": 0.5}},
    ]
    raws = [json.dumps(d).encode() for d in lines] + [b"hello from a library", b"{oops"]
    ingest.add(batch, raws)
    writer = StoreWriter(path, "R")
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    with RunStore(path) as store:
        store.record_observers("R", [ObserverReport("watcher", delivered_steps=2).to_dict()])
        store.finish_run("R", "completed", 0)


def test_a_run_record_has_every_key_of_its_type(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _store_with_a_run(path)
    with RunStore(path, readonly=True) as store:
        run = store.get_run("R")
        listed = store.list_runs()
    assert set(run) == set(columns_of(RunRecord))
    assert set(run["counts"]) == set(columns_of(RunCounts))
    assert [set(r) for r in listed] == [set(columns_of(RunRecord))]
    assert run["config"] == {"seed": 1, "env_id": "CartPole-v1"}
    assert run["observers"] == [
        {
            "name": "watcher",
            "delivered_steps": 2,
            "delivered_episodes": 0,
            "missed_steps": 0,
            "missed_episodes": 0,
            "error": None,
            "delivered_points": 0,
            "missed_points": 0,
        }
    ]
    assert set(run["observers"][0]) == set(columns_of(ObserverRecord))


def test_an_older_store_read_only_gives_the_same_keys(tmp_path: Path) -> None:
    """A version-2 store has no ``control_protocol`` (nor ``observers_json``...): read
    without migrating, its runs still have every key of :class:`RunRecord` (the control
    protocol None: a worker of that time read no commands)."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(V2_SQL.read_text())
    conn.execute(
        "INSERT INTO runs (run_id, worker, status, started_at, ended_at)"
        " VALUES ('OLD', 'fixture', 'completed', 1.0, 2.0)"
    )
    conn.commit()
    conn.close()
    with RunStore(path, readonly=True) as store:
        run = store.get_run("OLD")
    assert set(run) == set(columns_of(RunRecord))
    assert run["control_protocol"] is None and run["observers"] == []


def test_events_and_log_lines_have_the_keys_of_their_records(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _store_with_a_run(path)
    event_keys, log_keys = set(columns_of(EventRecord)), set(columns_of(LogLineRecord))
    with RunStore(path, readonly=True) as store:
        events = store.events("R") + store.events("R", limit=1) + store.events_after("R", 0, 10)
        events += store.events_named("R", "run_started") + list(store.custom_events("R", []))
        logs = store.log_lines("R") + store.log_lines_after("R", "stdout", 0, 10)
        agents = store.agents("R")
        raws = list(store.episode_lines("R", '"agent_id"'))
    assert len(events) == 2 + 1 + 2 + 1 + 2
    assert all(set(e) == event_keys for e in events)
    assert [e["event"] for e in store_events(path)] == ["run_started", "train_metrics"]
    assert len(logs) == 4 and all(set(line) == log_keys for line in logs)
    assert {line["kind"] for line in logs} == {"log", "invalid"}
    assert [a["agent_id"] for a in agents] == ["a", "b"]
    assert all(set(a) == set(columns_of(AgentSummary)) for a in agents)
    assert len(raws) == 1 and json.loads(raws[0])["type"] == "episode"


def store_events(path: Path) -> list[EventRecord]:
    with RunStore(path, readonly=True) as store:
        return store.events("R")


def test_the_observer_rows_are_the_table_columns() -> None:
    """One definition: the ``INSERT`` column lists are the fields of the observers' rows."""
    assert STEP_COLUMNS == StepRow._fields and EPISODE_COLUMNS == EpisodeRow._fields
    assert set(ObserverReport("x").to_dict()) == set(columns_of(ObserverRecord))
