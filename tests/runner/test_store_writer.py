"""The store writer keeps every line it is given, parsed or raw, and never dies or hangs."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.storage.store import RunStore
from tests.conftest import returns

RUN = "R1"


def _store(path: Path) -> Path:
    with RunStore(path) as store:
        store.create_run(RUN, "fixture")
    return path


def _stored_lines(path: Path) -> dict[int, tuple[str, str]]:
    """line_no -> (table, raw text) for every stdout row of the run."""
    conn = sqlite3.connect(path)
    out: dict[int, tuple[str, str]] = {}
    try:
        for table, col in (("steps", "raw"), ("episodes", "raw"), ("events", "raw")):
            for line_no, raw in conn.execute(
                f"SELECT line_no, {col} FROM {table} WHERE run_id = ?", (RUN,)
            ):
                assert line_no not in out
                out[line_no] = (table, raw)
        for line_no, text in conn.execute(
            "SELECT line_no, text FROM log_lines WHERE run_id = ? AND stream = 'stdout'", (RUN,)
        ):
            assert line_no not in out
            out[line_no] = ("log_lines", text)
    finally:
        conn.close()
    return out


def _step(**fields: Any) -> str:
    d: dict[str, Any] = {"type": "step", "episode_index": 0, "step_index": 1, "reward": 1.0}
    d.update(fields)
    return json.dumps(d)


HUGE = "1" + "0" * 400  # a valid JSON integer that no float or SQLite INTEGER holds

HOSTILE = [
    _step(),
    _step(episode_index="\ud800"),  # json.dumps writes the lone surrogate as an escape
    _step(reward=0).replace('"reward": 0', f'"reward": {HUGE}'),
    _step(step_index=0).replace('"step_index": 0', f'"step_index": -{HUGE}'),
    json.dumps({"type": "episode", "episode_index": 0, "total_reward": 1.5, "steps": 3}).replace(
        "1.5", HUGE
    ),
    json.dumps({"type": "lifecycle", "event": "\udcff", "payload": {"p": "\ud800"}}),
    json.dumps({"type": "lifecycle", "event": "heartbeat", "seq": 0}).replace(
        '"seq": 0', f'"seq": {HUGE}'
    ),
    _step(seq=[1, 2], ts_unix_ns={"a": 1}, terminated="\ud83d"),
    _step(),
]


def _write(path: Path, lines: list[str], per_batch: int = 3, **kw: Any) -> StoreWriter:
    writer = StoreWriter(path, RUN, **kw)
    feed = LineIngest(RUN)
    serial = 0
    for start in range(0, len(lines), per_batch):
        serial += 1
        batch = LineBatch(serial=serial)
        feed.add(batch, [line.encode() for line in lines[start : start + per_batch]])
        writer.submit(batch)
    return writer


def test_surrogates_and_huge_numbers_do_not_stop_the_writer(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.sqlite")
    lines = HOSTILE * 3
    writer = _write(path, lines)
    writer.close(timeout=30)
    assert writer.lost_rows == 0
    stored = _stored_lines(path)
    assert sorted(stored) == list(range(1, len(lines) + 1))
    for line_no, (_, raw) in stored.items():
        assert raw == lines[line_no - 1]  # the line exactly as written (ASCII escapes)
    conn = sqlite3.connect(path)
    try:
        # what fits a column is in it; what does not is NULL there and kept in raw
        reward = conn.execute("SELECT reward FROM steps WHERE line_no = 3").fetchone()
        assert reward == (None,)
        assert conn.execute("SELECT episode_index FROM steps WHERE line_no = 2").fetchone() == (
            None,
        )
        (event,) = conn.execute("SELECT event FROM events WHERE line_no = 6").fetchone()
        assert "dcff" in event.lower()
        (n,) = conn.execute("SELECT count(*) FROM steps").fetchone()
        (counted,) = conn.execute("SELECT steps FROM runs").fetchone()
        assert n == counted
    finally:
        conn.close()


class _Fatal(BaseException):
    """Stands for anything that ends a thread (not an Exception)."""


def test_a_dead_writer_blocks_neither_submit_nor_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path / "s.sqlite")

    def die(*args: Any, **kwargs: Any) -> None:
        raise _Fatal("the writer thread ends here")

    monkeypatch.setattr(StoreWriter, "_commit", die)
    done = threading.Event()
    box: dict[str, StoreWriter] = {}

    def produce() -> None:
        # far more batches than the queue holds: with a dead writer, submit must not wait
        box["w"] = _write(path, [_step()] * 400, per_batch=2, max_pending=4)
        box["w"].close(timeout=5)
        done.set()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    assert done.wait(60), "submit or close blocked on a dead writer"
    writer = box["w"]
    assert not writer.alive
    assert writer.lost_rows == 400
    assert writer.error is not None


@st.composite
def _json_values(draw: st.DrawFn) -> Any:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(10**400), max_value=10**400)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(alphabet=st.characters(), max_size=8)  # surrogates included
    )
    return draw(
        st.recursive(
            scalars,
            lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids),
            max_leaves=6,
        )
    )


_FIELDS = ("seq", "episode_index", "step_index", "reward", "terminated", "truncated")


@st.composite
def _telemetry_lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["step", "episode", "lifecycle"]))
    d: dict[str, Any] = {"type": kind}
    names = _FIELDS + ("ts_unix_ns", "total_reward", "steps", "event", "payload")
    for name in draw(st.lists(st.sampled_from(names), max_size=6, unique=True)):
        d[name] = draw(_json_values())
    if kind == "step" and draw(st.booleans()):
        d.setdefault("episode_index", 0)
        d.setdefault("step_index", 0)
    return json.dumps(d)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_telemetry_lines(), min_size=1, max_size=12))
def test_every_line_is_stored_parsed_or_raw(tmp_path_factory: Any, lines: list[str]) -> None:
    path = _store(tmp_path_factory.mktemp("w") / "s.sqlite")
    writer = _write(path, lines, per_batch=4)
    writer.close(timeout=30)
    assert writer.alive is False
    assert writer.lost_rows == 0, writer.error
    stored = _stored_lines(path)
    assert sorted(stored) == list(range(1, len(lines) + 1))
    for line_no, (_, raw) in stored.items():
        assert raw == lines[line_no - 1]


def _short_busy_timeout(monkeypatch: pytest.MonkeyPatch, seconds: float = 0.2) -> list:
    """Make every store connection give up on a lock after ``seconds`` (instead of 30 s), so a
    lock held for a few seconds stands for one held longer than the busy timeout."""
    from mosaic_sdk.runner.storage import store

    real = store.connect
    made: list = []

    def connect(path: Path, *, timeout: float = 30.0) -> sqlite3.Connection:
        conn = real(path, timeout=min(timeout, seconds))
        made.append(conn)
        return conn

    monkeypatch.setattr(store, "connect", connect)
    return made


def _hold_write_lock(path: Path, seconds: float) -> threading.Thread:
    held = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    assert held.wait(10)
    return t


def test_a_lock_held_longer_than_the_busy_timeout_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path / "s.sqlite")
    _short_busy_timeout(monkeypatch)
    reports: list[str] = []
    holder = _hold_write_lock(path, 4)
    writer = _write(path, [_step()] * 900, per_batch=10, max_pending=8, report=reports.append)
    holder.join()
    writer.close(timeout=60)
    assert writer.lost_rows == 0, writer.error
    assert len(_stored_lines(path)) == 900
    assert any("database is locked" in r and "retrying" in r for r in reports), reports
    assert any("takes writes again" in r for r in reports), reports


def test_a_full_disk_is_retried_then_reported_as_lost_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path / "s.sqlite")
    made = _short_busy_timeout(monkeypatch)
    reports: list[str] = []
    writer = StoreWriter(path, RUN, give_up_after=0.5, report=reports.append)
    conn = made[-1]
    # SQLITE_FULL, as from a full disk: the file may not grow past its size now
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count={pages}")
    feed = LineIngest(RUN)
    for serial in range(1, 41):
        batch = LineBatch(serial)
        # 25 rows of ~1 KB: more than the free room of the store's last (16 KiB) page
        feed.add(batch, [_step(reward=serial, pad="x" * 1000).encode()] * 25)
        writer.submit(batch)
    time.sleep(0.5)
    assert writer.committed_rows == 0 and writer.lost_rows == 0  # waiting, not dropped
    assert "full" in str(writer.stall_error)
    conn.execute("PRAGMA max_page_count=1000000")  # space again: everything goes in
    writer.close(timeout=60)
    assert writer.lost_rows == 0
    assert len(_stored_lines(path)) == 1000

    # a disk that stays full: the rows are counted lost at the end, never silently
    path2 = _store(tmp_path / "s2.sqlite")
    writer = StoreWriter(path2, RUN, give_up_after=0.5, report=reports.append)
    made[-1].execute(f"PRAGMA max_page_count={pages}")
    batch = LineBatch(1)
    LineIngest(RUN).add(batch, [_step(pad="x" * 200).encode()] * 500)
    writer.submit(batch)
    writer.close(timeout=60)
    assert writer.lost_rows == 500
    assert "full" in str(writer.error)


def test_a_stalled_store_does_not_hold_producers_once_the_run_is_abandoned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path / "s.sqlite")
    _short_busy_timeout(monkeypatch)
    holder = _hold_write_lock(path, 8)
    give_up = threading.Event()
    writer = StoreWriter(
        path,
        RUN,
        max_pending=2,
        max_backlog_rows=10,
        abandon=give_up.is_set,
        report=lambda _: None,
    )
    done = threading.Event()

    def produce() -> None:
        feed = LineIngest(RUN)
        for serial in range(1, 51):
            batch = LineBatch(serial)
            feed.add(batch, [_step().encode()] * 5)
            writer.submit(batch)
        done.set()

    threading.Thread(target=produce, daemon=True).start()
    assert not done.wait(1.5)  # backlog and queue full: the producer waits (nothing dropped)
    assert writer.lost_rows == 0
    give_up.set()  # e.g. Ctrl-C: the producer is let go, what it hands over is counted lost
    assert done.wait(10)
    returns(lambda: writer.close(abandon=lambda: True))  # a hang guard, not a measure
    assert writer.lost_rows == 250
    holder.join()


def test_a_row_its_table_refuses_is_kept_raw_and_the_rest_of_its_batch_stored(
    tmp_path: Path,
) -> None:
    path = _store(tmp_path / "s.sqlite")
    writer = StoreWriter(path, RUN)
    first = LineBatch(1)
    LineIngest(RUN).add(first, [_step(step_index=1).encode()])
    writer.submit(first)
    # a second ingest numbers its lines from 1 again: line 1 collides with the stored step
    second = LineBatch(2)
    lines = [_step(step_index=7), _step(step_index=8), "plain text"]
    LineIngest(RUN).add(second, [line.encode() for line in lines])
    writer.submit(second)
    writer.close(timeout=30)
    assert writer.lost_rows == 0, writer.error
    assert writer.degraded_rows == 1
    conn = sqlite3.connect(path)
    try:
        steps = conn.execute("SELECT line_no, step_index FROM steps ORDER BY line_no").fetchall()
        logs = conn.execute(
            "SELECT line_no, kind, error, text FROM log_lines ORDER BY line_no, kind"
        ).fetchall()
        (counted_steps, counted_logs) = conn.execute("SELECT steps, log_lines FROM runs").fetchone()
    finally:
        conn.close()
    assert steps == [(1, 1), (2, 8)]
    assert [(n, kind) for n, kind, _, _ in logs] == [(1, "unstored"), (3, "log")]
    assert "UNIQUE" in logs[0][2] and logs[0][3] == lines[0]
    assert (counted_steps, counted_logs) == (2, 2)


@pytest.mark.parametrize(
    ("merge_rows", "expected"), [(None, [10, 110]), (60, [10, 60, 50])], ids=["default", "60"]
)
def test_batches_that_queue_up_during_a_commit_share_the_next_transaction(
    tmp_path: Path, merge_rows: int | None, expected: list[int]
) -> None:
    path = _store(tmp_path / "s.sqlite")
    release = threading.Event()
    seen: list[int] = []

    def slow_commit(batch: LineBatch) -> None:  # the writer's thread waits here once
        seen.append(len(batch))
        if len(seen) == 1:
            assert release.wait(10)

    limit = {} if merge_rows is None else {"merge_rows": merge_rows}
    writer = StoreWriter(path, RUN, on_commit=slow_commit, **limit)
    feed = LineIngest(RUN)
    for serial in range(1, 13):  # 12 batches of 10 rows
        batch = LineBatch(serial)
        feed.add(batch, [_step(step_index=serial, reward=i).encode() for i in range(10)])
        writer.submit(batch)
        if serial == 1:
            while not seen:  # the first batch is committed; the others queue behind it
                time.sleep(0.01)
    release.set()
    writer.close(timeout=30)
    assert writer.lost_rows == 0
    # the first alone, then the 11 queued batches together (up to merge_rows rows each)
    assert seen == expected
    assert writer.transactions == len(expected)
    stored = _stored_lines(path)
    assert sorted(stored) == list(range(1, 121))
    assert all(table == "steps" for table, _ in stored.values())
