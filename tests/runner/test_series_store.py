"""Series (issue 32): what the ingest turns into points, how the store keeps them (NaN and
infinities too), the read API viewers use, limits that refuse with a count, and stores of
version 4 that read as before."""

from __future__ import annotations

import json
import math
import os
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.runner.recording.ingest import LineIngest
from mosaic_sdk.runner.reporting import Reporter, use_reporter
from mosaic_sdk.runner.storage import SeriesInfo, SeriesPoints
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.schema import SCHEMA_VERSION
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter
from mosaic_sdk.runner.supervisor import run_worker

V4_SQL = Path(__file__).resolve().parent / "fixtures" / "store_v4.sql"
HUGE = "1" + "0" * 400  # an integer no float holds


def _metrics(step: object, values: object, ts: int, agent: str | None = None) -> str:
    payload: dict[str, object] = {"step": step, "values": values}
    if agent is not None:
        payload["agent_id"] = agent
    return json.dumps(
        {"type": "lifecycle", "event": "metrics", "payload": payload, "ts_unix_ns": ts}
    )


def _event(name: str, payload: object, ts: int, **extra: object) -> str:
    return json.dumps(
        {"type": "lifecycle", "event": name, "payload": payload, "ts_unix_ns": ts, **extra}
    )


def _ingest(path: Path, lines: list[str], run_id: str = "R", **limits: int) -> LineIngest:
    with RunStore(path) as store:
        store.create_run(run_id, "w")
    ingest = LineIngest(run_id)
    for key, value in limits.items():
        setattr(ingest.series, key, value)
    writer = StoreWriter(path, run_id)
    batch = LineBatch(1)
    ingest.add(batch, [line.encode() for line in lines])
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    return ingest


def test_metrics_values_become_series_at_their_step_per_agent(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _ingest(
        path,
        [
            _metrics(3, {"losses/value": 0.5, "losses": {"policy": -0.25, "v": {"w": 2}}}, 30),
            _metrics(1, {"losses/value": 0.75}, 10),
            _metrics(1, {"losses/value": 9.0}, 11, agent="player_1"),
            _metrics(3, {"losses/value": 0.125}, 20),  # same step, earlier wall time
        ],
    )
    with RunStore(path, readonly=True) as store:
        infos = store.series("R")
        assert [(s.name, s.agent_id, s.points) for s in infos] == [
            ("losses.policy", None, 1),
            ("losses.v.w", None, 1),
            ("losses/value", None, 3),
            ("losses/value", "player_1", 1),
        ]
        value = infos[2]
        assert (value.first_step, value.last_step, value.last_value, value.last_wall_ns) == (
            1,
            3,
            0.5,
            30,
        )
        # by step, then wall time; the agent's points are apart
        assert store.series_points("R", "losses/value") == SeriesPoints(
            "losses/value", None, [1, 3, 3], [0.75, 0.125, 0.5], [10, 20, 30]
        )
        assert store.series_points("R", "losses/value", "player_1").values == [9.0]
        assert store.series_points("R", "losses/value", after_step=1).steps == [3, 3]
        assert store.series_points("R", "losses/value", limit=2).values == [0.75, 0.125]
        assert store.series_points("R", "no/such").steps == []
        assert [s.name for s in store.series("R", "losses/*")] == ["losses/value"] * 2
        assert [s.name for s in store.series("R", "losses.*")] == ["losses.policy", "losses.v.w"]
        assert store.series_counts("R") == {"points": 6, "refused": 0, "series": 4}
        # the metrics lines are stored as events, as every lifecycle line is
        assert [e["event"] for e in store.events("R")] == ["metrics"] * 4


def test_non_finite_values_are_kept_and_nan_stays_nan(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    line = (
        '{"type":"lifecycle","event":"metrics","ts_unix_ns":5,"payload":{"step":2,'
        f'"values":{{"nan":NaN,"inf":Infinity,"ninf":-Infinity,"e400":1e400,"big":{HUGE},'
        f'"nbig":-{HUGE},"zero":0}}}}}}'
    )
    _ingest(path, [line])
    with RunStore(path) as store:
        last = {s.name: s.last_value for s in store.series("R")}
        assert math.isnan(last.pop("nan"))
        assert last == {
            "inf": math.inf,
            "ninf": -math.inf,
            "e400": math.inf,
            "big": math.inf,
            "nbig": -math.inf,
            "zero": 0.0,
        }
        assert math.isnan(store.series_points("R", "nan").values[0])
        assert store.series_points("R", "zero").values == [0.0]  # 0 is not NaN, nor NULL


def test_values_that_are_no_numbers_are_refused_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    ingest = _ingest(
        path,
        [
            _metrics(1, {"ok": 1, "s": "text", "b": True, "l": [1, 2], "n": None}, 1),
            _metrics("seven", {"a": 1, "b": 2}, 2),  # no integer step: both refused
            _metrics(2.0, {"ok": 2}, 3),  # an integral float is a step
            _metrics(3, "not a mapping", 4),
        ],
    )
    assert ingest.series.refused == 4 + 2 + 1
    with RunStore(path) as store:
        assert store.series_counts("R") == {"points": 2, "refused": 7, "series": 1}
        assert store.series_points("R", "ok").steps == [1, 2]
        assert store.count_rows("R")["events"] == 4  # every line is stored all the same


def test_own_lifecycle_events_give_series_named_after_the_event(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _ingest(
        path,
        [
            _event("train_metrics", {"global_step": 100, "loss": 0.5, "phase": "x"}, 1),
            _event("train_metrics", {"loss": 0.25, "losses": {"policy": -1}, "update": 7}, 2),
            _event("eval", {"score": 1}, 3),
            _event("eval", {"score": 2, "flag": True}, 4, agent_id="a"),
            _event("eval", {"iteration": 9.5, "score": 3}, 5),  # no integer: the ordinal
            _event("heartbeat", {"uptime": 5}, 6),  # the standard events are no series
            _event("checkpoint_saved", {"step": 5, "size": 10}, 7),
        ],
    )
    with RunStore(path) as store:
        assert [(s.name, s.agent_id) for s in store.series("R")] == [
            ("eval/score", None),
            ("eval/score", "a"),
            ("train_metrics/loss", None),
            ("train_metrics/losses.policy", None),
        ]
        assert store.series_points("R", "train_metrics/loss").steps == [7, 100]
        assert store.series_points("R", "train_metrics/losses.policy").steps == [7]
        # the ordinal of the event in the run (the agent's line is the event's second)
        assert store.series_points("R", "eval/score").steps == [0, 2]
        assert store.series_points("R", "eval/score", "a").steps == [1]
        assert store.series_counts("R")["refused"] == 0  # "phase", the bool: not meant as one


def test_metrics_lines_are_batched_like_step_lines(tmp_path: Path) -> None:
    ingest = LineIngest("R")
    batch = LineBatch()
    own = _event("train_metrics", {"loss": 1}, 1)
    events = ingest.add(batch, [_metrics(1, {"x": 1}, 1).encode(), own.encode()])
    assert [e["event"] for e in events] == ["train_metrics"]  # no hand-over for metrics
    assert ingest.last_event == "train_metrics"
    assert len(batch.events) == 2 and len(batch.points) == 2


def test_distinct_series_past_the_limit_are_refused_with_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    told: list[str] = []
    with RunStore(path) as store:
        store.create_run("R", "w")
    ingest = LineIngest("R")
    writer = StoreWriter(path, "R")
    names = {f"n{i}": float(i) for i in range(12_000)}
    with use_reporter(Reporter(told.append)):
        for step in range(3):
            batch = LineBatch(step + 1)
            ingest.add(batch, [_metrics(step, names, step).encode()])
            writer.submit(batch)
        batch = LineBatch(4)
        ingest.add(batch, [_metrics(9, {"x" * 5000: 1.0, "": 2.0, "n0": 3.0}, 9).encode()])
        writer.submit(batch)
    writer.close()
    assert len(told) == 1 and "10000 distinct series" in told[0]
    with RunStore(path) as store:
        counts = store.series_counts("R")
        assert counts == {"points": 30_001, "refused": 6_002, "series": 10_000}
        assert store.series_points("R", "n0").values == [0.0, 0.0, 0.0, 3.0]


def test_series_survive_reopening_and_are_deleted_with_their_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _ingest(path, [_metrics(1, {"a": 1.5}, 1)])
    with RunStore(path) as store:
        assert store.series("R") == [SeriesInfo("a", None, 1, 1, 1, 1.5, 1)]
        store.delete_run("R")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM series_points").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM series").fetchone() == (0,)
    finally:
        conn.close()


def _v4_store(path: Path) -> Path:
    """A store laid out as version 4 made it (its own SQL, dumped), holding one run."""
    conn = sqlite3.connect(path)
    conn.executescript(V4_SQL.read_text())
    conn.execute(
        "INSERT INTO runs (run_id, worker, status, started_at, ended_at, steps, episodes,"
        " events) VALUES ('OLD', 'fixture', 'completed', 1.0, 2.0, 1, 1, 1)"
    )
    conn.execute(
        "INSERT INTO events VALUES ('OLD', 1, 0, 'train_metrics', 5, 0, '{\"loss\": 1}', 'x')"
    )
    conn.commit()
    conn.close()
    os.chmod(path, 0o600)
    return path


def test_a_version_4_store_reads_as_before_and_migrates(tmp_path: Path) -> None:
    path = _v4_store(tmp_path / "old.sqlite")
    with RunStore(path, readonly=True) as store:  # read-only: nothing written, no series
        assert store.get_run("OLD")["counts"]["steps"] == 1
        assert store.series("OLD") == []
        assert store.series_points("OLD", "train_metrics/loss").steps == []
        assert store.series_counts("OLD") == {"points": 0, "refused": 0, "series": 0}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("4",)
    conn.close()
    with RunStore(path) as store:  # opening for writing migrates
        assert store.get_run("OLD")["counts"]["events"] == 1
        assert store.series_counts("OLD") == {"points": 0, "refused": 0, "series": 0}
        assert [e["event"] for e in store.events("OLD")] == ["train_metrics"]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        assert SCHEMA_VERSION >= 5  # 6: sweep_trials.parent_run_id
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert {"series", "series_points", "series_by_name"} <= tables
    finally:
        conn.close()
    _ingest(path, [_metrics(4, {"a": 2.0}, 1)], run_id="NEW")  # and takes series
    with RunStore(path, readonly=True) as store:
        assert store.series_points("NEW", "a").values == [2.0]


@pytest.fixture
def echo_worker(fixture_workers: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MOSAIC_PLUGINS", os.environ["MOSAIC_PLUGINS"] + ",echo=store_workers:Echo")
    return "echo"


def test_a_run_stores_every_series_point_among_many_step_lines(
    echo_worker: str, tmp_path: Path
) -> None:
    lines = []
    for i in range(3000):
        lines.append(json.dumps({"type": "step", "episode_index": 0, "step_index": i}))
        if i % 10 == 9:
            lines.append(_metrics(i, {"charts/sps": float(i), "losses": {"v": math.nan}}, i))
    lines.append(_event("run_completed", {}, 0))
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(line + "\n" for line in lines))
    result = run_worker(echo_worker, {"lines_file": str(source)}, store=tmp_path / "runs.sqlite")
    assert result.status == "completed", result.error
    with RunStore(tmp_path / "runs.sqlite", readonly=True) as store:
        assert store.series_counts(result.run_id) == {"points": 600, "refused": 0, "series": 2}
        sps = store.series_points(result.run_id, "charts/sps")
        assert sps.steps == list(range(9, 3000, 10)) and sps.values == [float(s) for s in sps.steps]
        assert all(math.isnan(v) for v in store.series_points(result.run_id, "losses.v").values)


def test_counts_name_env_steps_step_lines_and_episodes_apart(
    echo_worker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Throttled step lines (every 5th), an episode in progress at the end, and two agents
    of a zero-sum game: env steps, step lines, games and agent episodes each say what they
    count, and the returns are told per agent."""
    from mosaic_sdk.cli import main
    from mosaic_sdk.cli.run import summary_line

    lines = []
    for episode in range(2):
        for agent, ret in (("a", 1.0), ("b", -1.0)):
            for i in range(0, 20, 5):
                lines.append(
                    json.dumps(
                        {
                            "type": "step",
                            "episode_index": episode,
                            "step_index": i,
                            "agent_id": agent,
                        }
                    )
                )
            lines.append(
                json.dumps(
                    {
                        "type": "episode",
                        "episode_index": episode,
                        "total_reward": ret,
                        "steps": 20,
                        "agent_id": agent,
                    }
                )
            )
    for i in range(3):  # game 2 goes on: agent a's step lines after its last episode line
        lines.append(
            json.dumps({"type": "step", "episode_index": 2, "step_index": i, "agent_id": "a"})
        )
    lines.append(_metrics(7, {"losses/v": 0.5}, 1, agent="a"))
    lines.append(_event("run_completed", {}, 0))
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(line + "\n" for line in lines))
    store = tmp_path / "runs.sqlite"
    result = run_worker(echo_worker, {"lines_file": str(source)}, store=store)
    c = result.counts
    assert (c["env_steps"], c["step_lines"], c["games"], c["agent_episodes"]) == (83, 19, 2, 4)
    line = summary_line(result)
    assert (
        "83 env steps (summed over the agents), 19 step lines, 2 games (4 agent episodes)" in line
    )
    assert "returns per agent: a mean 1.000 (last 1.000), b mean -1.000 (last -1.000)" in line
    capsys.readouterr()
    assert main(["runs", "show", result.run_id, "--store", str(store), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert {a["agent_id"]: a["env_steps"] for a in shown["agents"]} == {"a": 43, "b": 40}
    assert shown["series"] == [
        {
            "name": "losses/v",
            "agent_id": "a",
            "points": 1,
            "first_step": 7,
            "last_step": 7,
            "last_value": 0.5,
            "last_wall_ns": 1,
        }
    ]
    assert shown["series_counts"] == {"points": 1, "refused": 0, "series": 1}
    assert main(["runs", "show", result.run_id, "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "series (1 series, 1 points):" in text
    assert text.split("series (1 series, 1 points):")[1].splitlines()[2].split() == [
        "losses/v",
        "a",
        "1",
        "7",
        "0.5",
    ]
    assert main(["runs", "list", "--store", str(store)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split()[-5:] == ["env", "steps", "step", "lines", "episodes"]
    assert listed[1].split()[-7:] == ["83", "19", "2", "games", "(4", "agent", "episodes)"]


def test_metrics_lines_off_the_fast_path_give_the_same_rows(tmp_path: Path) -> None:
    """A metrics line the fast path does not take (leading blank, an ``event_type`` dialect
    line is not one) gives the same event row and points as one it takes."""
    line = _metrics(4, {"a": 1.5, "b": {"c": 2}}, 9)
    rows = []
    for text in (line, " " + line):
        ingest = LineIngest("R")
        batch = LineBatch()
        assert ingest.add(batch, [text.encode()]) == []
        event = batch.events[0]
        rows.append((event[3], event[6], batch.series, batch.points))
    assert rows[0] == rows[1]
    assert rows[0][2] == [("R", 1, "a", None), ("R", 2, "b.c", None)]


def test_points_a_table_refuses_are_counted_and_the_lines_kept(tmp_path: Path) -> None:
    """The one-row-at-a-time fallback of the writer: points its table refuses (here the
    same point twice) are counted as refused, every line is stored, nothing is lost."""
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        store.create_run("R", "w")
    ingest = LineIngest("R")
    batch = LineBatch(1)
    ingest.add(batch, [_metrics(1, {"a": 1.0, "b": 2.0}, 5).encode()])
    batch.points.append(batch.points[0])  # a duplicate key: the batch fails as a whole
    writer = StoreWriter(path, "R")
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    with RunStore(path) as store:
        assert store.count_rows("R")["events"] == 1
        assert store.series_counts("R") == {"points": 0, "refused": 3, "series": 0}


def test_runs_show_lists_the_first_series_and_says_how_many_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main

    path = tmp_path / "runs.sqlite"
    _ingest(path, [_metrics(1, {f"s{i:03d}": float(i) for i in range(60)}, 1)])
    assert main(["runs", "show", "R", "--store", str(path)]) == 0
    text = capsys.readouterr().out
    assert "series (60 series, 60 points):" in text
    assert "  s049  " in text and "  s050  " not in text
    assert "... and 10 more (--json lists them all" in text
    assert main(["runs", "show", "R", "--store", str(path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["series"]) == 60
