"""Pieces of the runner on their own: the line reader, ingest, config input, store, views."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from mosaic_sdk.contract import ConfigError
from mosaic_sdk.runner.live import NullDisplay, PlainDisplay, RichDisplay, Snapshot, choose_display
from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest
from mosaic_sdk.runner.recording.outcome import decide
from mosaic_sdk.runner.storage.store import RunStore, StoreError, UnknownRunError
from mosaic_sdk.runner.supervision.config_input import (
    apply_overrides,
    parse_override,
    read_config_file,
)
from mosaic_sdk.runner.supervision.process import WorkerProcess
from mosaic_sdk.telemetry import TelemetryEmitter, classify_line

# --- WorkerProcess.read_lines -------------------------------------------------------------


def _proc(code: str) -> WorkerProcess:
    return WorkerProcess([sys.executable, "-c", code])


def test_read_lines_returns_everything_and_flags_a_partial_last_line() -> None:
    proc = _proc("import sys; sys.stdout.write('a\\nb\\n' + 'x' * 200000 + '\\nhalf')")
    got: list[bytes] = []
    eof = False
    while not eof:
        lines, eof = proc.read_lines(1.0)
        got.extend(lines)
    assert got == [b"a", b"b", b"x" * 200000, b"half"]
    assert proc.stdout_partial is True
    assert proc.read_lines(0) == ([], True)
    assert proc.wait() == 0
    proc.close()


def test_read_lines_times_out_without_data() -> None:
    proc = _proc("import time; time.sleep(5)")
    try:
        assert proc.read_lines(0.05) == ([], False)
    finally:
        proc.kill_group()
        proc.wait()
        proc.close()


def test_lines_keeps_its_behaviour() -> None:
    proc = _proc("print('one'); print('two', end='')")
    assert [raw for raw, _ in proc.lines()] == [b"one", b"two"]
    assert proc.stdout_partial is True
    proc.wait()
    proc.close()


def test_stderr_lines_reach_the_callback() -> None:
    seen: list[tuple[list[bytes], bool]] = []
    proc = WorkerProcess(
        [sys.executable, "-c", "import sys; sys.stderr.write('e1\\ne2\\nlast')"],
        on_stderr_lines=lambda lines, partial: seen.append((lines, partial)),
    )
    proc.wait()
    assert proc.join_stderr(5)
    flat = [line for lines, _ in seen for line in lines]
    assert flat == [b"e1", b"e2", b"last"]
    assert seen[-1] == ([b"last"], True)
    proc.close()


# --- ingest ----------------------------------------------------------------------------------


def _emitted_lines() -> list[bytes]:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0, worker_id="w")
    em.run_started(worker_type="x")
    em.step(0, 0, 0.5, action=[1, 2], observation={"a": 1})
    em.step(0, 1, 1.5, terminated=True)
    em.episode(0, 2.0, 2, terminated=True)
    em.heartbeat(step=2)
    return [line.encode() for line in buf.getvalue().splitlines()]


UPSTREAM_AND_ODD = [
    b'{"event_type": "step", "episode": 3, "step": 4, "reward": 1}',  # the worker guide's shape
    b'{"type": "step", "episode": 5, "step": 6, "reward": 2}',  # aliases with our discriminator
    # the platform's trainer: a display value in "episode", the index where the proxy reads it
    b'{"type": "step", "episode": 107, "metadata": {"episode_index": 2}, "step": 0}',
    b'{"type":"step","episode_index":1,"step_index":2,"reward":3} trailing',  # broken
    b'{"type":"step","episode_index":1,"step_index":2,"reward":3}\r',  # CRLF
    b'{"event": "run_completed", "payload": {}, "run_id": "r"}',  # the platform's lifecycle
    b"plain text",
    b"[1, 2]",
    b'{"type": "telemetry?"}',
    b"\xff\xfe not utf-8",
]

#: Step lines in our field names whose values JSON parsers are known to disagree on.
STEP_EDGES = [
    b'{"type":"step","episode_index":0,"step_index":1,"reward":123456789012345678901234567890}',
    b'{"type":"step","episode_index":0,"step_index":2,"reward":NaN,"seq":-Infinity}',
    b'{"type":"step","episode_index":0,"step_index":3,"reward":1e400,"ts_unix_ns":-0.0}',
    b'{"type":"step","episode_index":0,"step_index":4,"agent_id":"\\ud800","reward":1}',
    b'{"type":"step","episode_index":0,"step_index":5,"reward":1,"reward":2.5}',
    b'{"type":"step","episode_index":0,"step_index":6,"reward":4.9e-324} ',
    b'{"type":"step","episode_index":0,"step_index":7,"reward":1.0000000000000002}',
    b'{"type":"step","episode_index":0,"step_index":8,"agent_id":"\xc3\xa9\\u00e9\\n"}',
    b'{"type":"step","episode_index":0,"step_index":9,"terminated":true,"truncated":null}',
    b'{"type":"step","episode_index":[0],"step_index":{"a":[1,[2]]},"reward":"1"}',
]


def test_ingest_rows_agree_with_classify_line() -> None:
    """The fast path for step lines must give what classify_line gives, line for line."""
    raws = _emitted_lines() + UPSTREAM_AND_ODD + STEP_EDGES
    ingest = LineIngest("r")
    batch = LineBatch()
    ingest.add(batch, raws)
    by_line: dict[int, tuple[str, tuple]] = {}  # type: ignore[type-arg]
    for row in batch.steps:
        by_line[row[1]] = ("step", row)
    for row in batch.episodes:
        by_line[row[1]] = ("episode", row)
    for row in batch.events:
        by_line[row[1]] = ("lifecycle", row)
    for row in batch.logs:
        by_line[row[2]] = (row[3], row)
    assert sorted(by_line) == list(range(1, len(raws) + 1))
    for line_no, raw in enumerate(raws, 1):
        item = classify_line(raw)
        kind, row = by_line[line_no]
        assert kind == item.kind, raw
        if kind == "step":
            d = item.data
            keys = ("seq", "episode_index", "step_index", "reward", "terminated", "truncated")
            expected = (
                *(d.get(k) for k in keys),
                d.get("ts_unix_ns"),
                item.text,
                d.get("agent_id"),
            )
            assert repr(row[2:11]) == repr(expected), raw  # repr: NaN == NaN, -0.0 != 0.0
        elif kind in ("log", "invalid"):
            assert row[6] == item.text
    assert ingest.steps == 6 + len(STEP_EDGES) and ingest.episodes == 1 and ingest.events == 3
    platform_line = next(r for r in batch.steps if b'"episode": 107' in r[9].encode())
    assert platform_line[3] == 2  # stored under the index the platform shows
    assert ingest.terminal_event is not None
    assert ingest.terminal_event["event"] == "run_completed"
    assert batch.lines == len(raws)


# --- config input -----------------------------------------------------------------------------


def test_overrides_parse_json_or_keep_strings() -> None:
    assert parse_override("seed=3") == (["seed"], 3)
    assert parse_override("env_id=CartPole-v1") == (["env_id"], "CartPole-v1")
    assert parse_override("x.y=[1, 2]") == (["x", "y"], [1, 2])
    assert parse_override("flag=true") == (["flag"], True)
    data = {"a": 1, "extras": {"lr": 0.1}}
    out = apply_overrides(data, ["a=2", "extras.lr=0.5", "new.deep=x"])
    assert out == {"a": 2, "extras": {"lr": 0.5}, "new": {"deep": "x"}}
    assert data == {"a": 1, "extras": {"lr": 0.1}}  # the input is not changed


@pytest.mark.parametrize(
    ("override", "message"),
    [("novalue", "not of the form key=value"), ("=3", "not of the form"), ("a..b=1", "empty")],
)
def test_bad_overrides(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        apply_overrides({}, [override])


def test_override_into_a_scalar_is_refused() -> None:
    with pytest.raises(ConfigError, match="'a' is not an object"):
        apply_overrides({"a": 1}, ["a.b=2"])


def test_config_file_forms(tmp_path: Path) -> None:
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"seed": 1}))
    assert read_config_file(flat) == {"seed": 1}
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"run_id": "j", "metadata": {"worker": {"config": {"seed": 2}}}}))
    assert read_config_file(job) == {"seed": 2, "run_id": "j"}
    with pytest.raises(ConfigError, match="is a directory"):
        read_config_file(tmp_path)


# --- store ---------------------------------------------------------------------------------


def test_store_is_in_wal_mode_and_refuses_a_duplicate_run(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.create_run("a1", "w")
        with pytest.raises(StoreError, match="already in the store"):
            store.create_run("a1", "w")
        store.finish_run("a1", "completed", 0)
        with pytest.raises(ValueError):
            store.finish_run("a1", "exploded", 0)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "events", "steps", "episodes", "log_lines"} <= tables
    conn.close()


def test_store_resolves_prefixes(tmp_path: Path) -> None:
    with RunStore(tmp_path / "s.sqlite") as store:
        for rid in ("abc1", "abc2", "xyz_1"):
            store.create_run(rid, "w")
        assert store.resolve("xyz") == "xyz_1"
        assert store.get_run("abc2")["run_id"] == "abc2"
        with pytest.raises(UnknownRunError, match="ambiguous"):
            store.resolve("abc")
        with pytest.raises(UnknownRunError, match="no run 'q'"):
            store.resolve("q")
        assert store.resolve("xyz_1") == "xyz_1"
        with pytest.raises(UnknownRunError):
            store.resolve("xyz%")  # LIKE wildcards are taken literally
        assert [r["run_id"] for r in store.list_runs(worker="w", limit=2)] == ["xyz_1", "abc2"]


def test_store_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist; create it"):
        RunStore(tmp_path / "missing" / "s.sqlite")
    with pytest.raises(StoreError, match="is a directory"):
        RunStore(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open the store"):
        RunStore(junk)


# --- outcome ---------------------------------------------------------------------------------


def test_a_worker_killed_by_a_signal_fails_with_the_signal_named() -> None:
    outcome = decide(
        "r", terminal=None, exit_code=-11, cancel_reason=None, stderr_tail="", episodes=0
    )
    assert outcome.status == "failed"
    assert "the worker was killed by signal SIGSEGV (-11)" in (outcome.error or ""), outcome


@pytest.mark.parametrize(
    ("event", "code", "cancel", "status", "synth"),
    [
        ("run_completed", 0, None, "completed", None),
        ("run_completed", 1, None, "failed", "run_failed"),
        ("run_failed", 1, None, "failed", None),
        ("run_cancelled", 143, None, "cancelled", None),
        (None, 0, None, "failed", "run_failed"),
        (None, -9, None, "failed", "run_failed"),
        (None, -9, "SIGINT", "cancelled", "run_cancelled"),
        ("run_cancelled", 143, "SIGINT", "cancelled", None),
        ("run_completed", 0, "SIGINT", "completed", None),
        ("run_failed", 1, "SIGINT", "failed", None),
    ],
)
def test_outcome_rules(
    event: str | None, code: int, cancel: str | None, status: str, synth: str | None
) -> None:
    terminal = {"event": event, "payload": {"error": "boom"}} if event else None
    outcome = decide(
        "r", terminal=terminal, exit_code=code, cancel_reason=cancel, stderr_tail="", episodes=0
    )
    assert outcome.status == status
    assert (outcome.synthesised or {}).get("event") == synth
    if outcome.synthesised:
        assert outcome.synthesised["synthesised"] is True
        assert outcome.synthesised["type"] == "lifecycle"


# --- views --------------------------------------------------------------------------------


def _snap(**kw: object) -> Snapshot:
    base = dict(
        run_id="R",
        worker="w",
        elapsed=61.0,
        steps=120,
        episodes=3,
        events=1,
        log_lines=0,
        recent_returns=[1.0, 2.0, 3.0],
        last_event="run_started",
    )
    base.update(kw)
    return Snapshot(**base)  # type: ignore[arg-type]


def test_plain_display_prints_at_most_once_per_interval() -> None:
    out = io.StringIO()
    view = PlainDisplay(out, interval=3600)
    view.update(_snap())
    assert out.getvalue() == ""  # nothing before the first interval has passed
    view._next = 0.0  # as if an interval had passed
    view.update(_snap())
    view.update(_snap(steps=999))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert "01:01 steps=120" in lines[0]
    assert "episodes=3" in lines[0] and "mean_return(last 20)=2.00" in lines[0]


def test_rich_display_renders_the_numbers() -> None:
    out = io.StringIO()
    view = RichDisplay(out)
    view.update(_snap())
    view.finish(_snap(status="completed"))
    text = out.getvalue()
    assert "120" in text and "2.00" in text and "completed" in text


def test_choose_display() -> None:
    assert isinstance(choose_display(io.StringIO()), PlainDisplay)
    assert isinstance(choose_display(io.StringIO(), quiet=True), NullDisplay)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(choose_display(Tty()), RichDisplay)


def test_plain_display_survives_a_closed_stream() -> None:
    out = io.StringIO()
    out.close()
    view = PlainDisplay(out, interval=0)
    view.update(_snap())  # no exception: a closed pipe must not end the run
    view.update(_snap())


@pytest.mark.parametrize("count", [0, 1, 15, 16, 17, 255, 256, 257, 700])
def test_insert_rows_stores_every_row_once(tmp_path: Path, count: int) -> None:
    from mosaic_sdk.runner.storage import schema as store_sql
    from mosaic_sdk.runner.storage.rows import insert_rows

    conn = store_sql.connect(tmp_path / "s.sqlite")

    def agent(i: int) -> str | None:
        return f"a{i % 3}" if i % 2 else None

    rows = [
        ("r", i, i, 0, i, float(i), i % 2, 0, 10 * i, f'{{"i":{i}}}', agent(i))
        for i in range(count)
    ]
    insert_rows(conn, store_sql.INSERT_STEP, rows)
    got = conn.execute(
        "SELECT run_id, line_no, seq, episode_index, step_index, reward, terminated, truncated,"
        " ts_unix_ns, raw, agent_id FROM steps ORDER BY line_no"
    ).fetchall()
    assert got == rows
    conn.close()


@pytest.mark.parametrize("count", [15, 16, 256, 300])
def test_insert_rows_keeps_booleans_nulls_and_texts_that_look_like_them(
    tmp_path: Path, count: int
) -> None:
    """The blocks bind booleans as 0/1 and a None of agent_id / error as an integer the
    statement turns back into NULL: a text "0", "" or "NULL" stays that text, a None is NULL,
    and any other value of a boolean column (a number, a text) is stored as given."""
    from mosaic_sdk.runner.storage import schema as store_sql
    from mosaic_sdk.runner.storage.rows import insert_rows

    conn = store_sql.connect(tmp_path / "s.sqlite")
    agents = [None, "0", "", "NULL", "a", "\u00e9"]
    flags: list[object] = [True, False, None, 1, 0.5, "x", 0]
    rows = [
        ("r", i, i, 0, i, 1.0, flags[i % 7], flags[(i + 3) % 7], i, "{}", agents[i % 6])
        for i in range(count)
    ]
    insert_rows(conn, store_sql.INSERT_STEP, rows)
    got = conn.execute(
        "SELECT terminated, truncated, agent_id, typeof(agent_id) FROM steps ORDER BY line_no"
    ).fetchall()
    want_type = {None: "null"}
    assert got == [(r[6], r[7], r[10], want_type.get(r[10], "text")) for r in rows]
    logs = [("r", "stderr", i, "log", 0, [None, "0", "", "e"][i % 4], "t") for i in range(count)]
    insert_rows(conn, store_sql.INSERT_LOG, logs)
    got_logs = conn.execute("SELECT error FROM log_lines ORDER BY line_no").fetchall()
    assert got_logs == [(r[5],) for r in logs]
    conn.close()


@pytest.mark.parametrize("nesting", [97, 98, 99, 100, 101])
def test_ingest_and_classify_line_agree_on_the_deepest_short_step_lines(nesting: int) -> None:
    """The shortest step lines around MAX_JSON_DEPTH (the fast path skips the bracket count
    for step lines of up to 244 characters: they cannot nest deeper than 100)."""
    opened, closed = "[" * nesting, "]" * nesting
    raw = f'{{"type":"step","episode_index":{opened}{closed},"step_index":0}}'.encode()
    ingest = LineIngest("r")
    batch = LineBatch()
    ingest.add(batch, [raw])
    kind = "step" if batch.steps else batch.logs[0][3]
    assert kind == classify_line(raw).kind == ("step" if nesting < 100 else "invalid")


@pytest.mark.parametrize("nesting", [97, 98, 99, 100, 101])
def test_ingest_and_classify_line_agree_on_the_deepest_short_metrics_lines(nesting: int) -> None:
    """The shortest metrics lines around MAX_JSON_DEPTH: past it, an invalid line as
    classify_line says (not an event: the step lines' length bound does not hold for them)."""
    opened, closed = "[" * nesting, "]" * nesting
    raw = f'{{"type":"lifecycle","event":"metrics","x":{opened}{closed}}}'.encode()
    ingest = LineIngest("r")
    batch = LineBatch()
    ingest.add(batch, [raw])
    kind = "lifecycle" if batch.events else batch.logs[0][3]
    assert kind == classify_line(raw).kind == ("lifecycle" if nesting < 100 else "invalid")


#: Metrics lines (payloads) whose values JSON parsers are known to disagree on.
METRICS_EDGES = [
    '{"step":1,"values":{"a":NaN,"b":Infinity,"c":-Infinity}}',
    '{"step":2,"values":{"a":1e400,"b":123456789012345678901234567890}}',
    '{"step":3,"values":{"a":1,"a":2.5},"step":4}',
    '{"step":5,"values":{"\\ud800":1.0,"x":"\\ud800"}}',
    '{"step":6,"values":{"a":{"b":{"c":[1]}},"d":true,"e":null}}',
    '{"step":7.0,"values":{"a":4.9e-324},"agent_id":"p\\u00e9"}',
    '{"step":"8","values":{"a":1.0}}',
    '{"values":[1,2]}',
    "null",
    "[1]",
]


@pytest.mark.parametrize("payload", METRICS_EDGES)
def test_metrics_lines_give_what_classify_line_gives(payload: str) -> None:
    """A metrics line the fast path takes gives the event row, series and points (and
    refusals) of the same line read through classify_line (a leading blank sends it there)."""
    line = f'{{"type":"lifecycle","event":"metrics","seq":3,"ts_unix_ns":5,"payload":{payload}}}'
    got = []
    for text in (line, " " + line):
        ingest = LineIngest("r")
        batch = LineBatch()
        assert ingest.add(batch, [text.encode()]) == []
        event = batch.events[0]
        got.append((event[:7], batch.series, repr(batch.points), batch.refused, ingest.events))
    assert got[0] == got[1]
    assert got[0][0][3] == "metrics"


def test_the_live_view_counts_games_and_tells_agents_returns_apart() -> None:
    # a zero-sum game of two players: 3 games, 6 episode lines; the blend of returns is 0
    ingest = LineIngest("R")
    lines = [
        json.dumps(
            {"type": "episode", "episode_index": g, "total_reward": r, "steps": 3, "agent_id": a}
        ).encode()
        for g, winner in enumerate(["p1", "p1", "p2"])
        for a, r in (
            ("p1", 1.0 if winner == "p1" else -1.0),
            ("p2", 1.0 if winner == "p2" else -1.0),
        )
    ]
    ingest.add(LineBatch(serial=1), lines)
    assert (ingest.episodes, ingest.games) == (6, 3)
    snap = _snap(
        episodes=ingest.episodes,
        recent_returns=ingest.recent_returns,
        games=ingest.games,
        agent_returns=ingest.agent_returns,
    )
    assert snap.mean_return == 0.0
    out = io.StringIO()
    view = PlainDisplay(out, interval=0)
    view._next = 0.0
    view.update(snap)
    line = out.getvalue()
    assert "games=3 agent_episodes=6 " in line and "episodes=6 " not in line.replace("_e", "")
    assert "mean_return(last 20)=p1:0.33,p2:-0.33 " in line
    rich = io.StringIO()
    panel = RichDisplay(rich)
    panel.update(snap)
    panel.finish(snap)
    text = rich.getvalue()
    assert "3  (6 agent episodes)" in text and "p1 0.33, p2 -0.33" in text
    # a single-agent run reads as before
    single = LineIngest("S")
    single.add(LineBatch(serial=1), [b'{"type": "episode", "episode_index": 0, "total_reward": 2}'])
    assert single.games is None and single.agent_returns == {}


@pytest.mark.parametrize(
    "payload",
    [
        {"step": 9, "values": {"b": 1.0, "a": float("nan"), "c": [1, 2, {"z": None, "y": True}]}},
        {"x": Path("/a"), "\u00e9": "\u00fc\u2028\ud800", "inf": float("-inf"), "big": 10**30},
        {"a": {"b": {}}, "l": [], "t": (1, 2), "s": {1}},
        {1: 2, "a": 3},  # keys json cannot sort: the same error
        [1, {"b": 2, "a": 1}],
    ],
)
def test_event_payloads_are_stored_as_json_dumps_writes_them(payload: object) -> None:
    """The ingest's payload encoder (json's C encoder, called directly) gives the text of
    ``json.dumps(payload, sort_keys=True, default=str)``, or raises what it raises."""
    import json

    from mosaic_sdk.runner.recording.ingest import _encode_payload

    try:
        want: object = json.dumps(payload, sort_keys=True, default=str)
    except TypeError as exc:
        want = repr(exc)
    try:
        got: object = _encode_payload(payload)
    except TypeError as exc:
        got = repr(exc)
    assert got == want
