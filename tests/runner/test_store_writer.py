"""The store writer keeps every line it is given, parsed or raw, and never dies or hangs."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mosaic_sdk.runner.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.store import RunStore

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
