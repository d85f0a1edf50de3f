"""The whole runner against generated hostile output: it ends, its status is honest, and every
line is stored (parsed, or its text kept, cut with a note when longer than the maximum).

The worker replays bytes the test made up: binary, Rich markup and terminal escapes, deep
nesting, lines longer than the maximum, valid telemetry with hostile event names, ``\\r``,
no final newline, and values SQLite cannot bind: lone surrogates (what ``json.dumps`` of a
``surrogateescape``-decoded file name gives), integers beyond 64 bits, numbers beyond a double,
NaN and infinities.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mosaic_sdk.runner import run_worker

MAX_LINE = 4096
TERMINAL = {"run_completed": "completed", "run_failed": "failed", "run_cancelled": "cancelled"}

FRAGMENTS = ["[/x]", "[bold]", "\x1b]0;T\x07", "\x1b[2J", "\x07", "\x00", "\u202e", "é", "{", "["]
EVENT_NAMES = ["run_started", "heartbeat", *TERMINAL, *FRAGMENTS]


def _event(name: str) -> bytes:
    return json.dumps({"type": "lifecycle", "event": name}).encode()


def _step(i: int) -> bytes:
    return json.dumps({"type": "step", "episode_index": 0, "step_index": i, "reward": 1.0}).encode()


#: JSON values that parse but that no SQLite column takes as they are.
UNBINDABLE = st.one_of(
    st.sampled_from(["\ud800", "a\udcffb", "\udfff" * 3]),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=4),
    st.integers(min_value=2**63),
    st.integers(max_value=-(2**63) - 1),
    st.just(10**400),
    st.sampled_from([float("inf"), float("-inf"), float("nan")]),
)


def _unbindable_step(value: object) -> bytes:
    line = {"type": "step", "episode_index": value, "step_index": value, "reward": value}
    return json.dumps(line).encode()


def _unbindable_episode(value: object) -> bytes:
    line = {"type": "episode", "episode_index": value, "total_reward": value, "steps": value}
    return json.dumps(line).encode()


LINE = st.one_of(
    UNBINDABLE.map(_unbindable_step),
    UNBINDABLE.map(_unbindable_episode),
    UNBINDABLE.map(
        lambda v: json.dumps({"type": "lifecycle", "event": "x", "payload": v}).encode()
    ),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1).map(_event),
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b"")),
    st.lists(st.sampled_from(FRAGMENTS), max_size=8).map(lambda p: "".join(p).encode()),
    st.integers(90, 3000).map(lambda n: b"[" * n),
    st.integers(90, 3000).map(lambda n: b'{"type":"step","x":' + b"[" * n + b"]" * n + b"}"),
    st.integers(MAX_LINE - 2, 3 * MAX_LINE).map(lambda n: b"x" * n),
    st.integers(0, 10**6).map(_step),
    st.sampled_from(EVENT_NAMES).map(_event),
    st.sampled_from([b"\r", b"plain\r", b"\r\r"]),
)


def _expected_text(line: bytes) -> str:
    if len(line) > MAX_LINE:
        return line[:MAX_LINE].decode("utf-8", "replace")
    return line.decode("utf-8", "replace").rstrip("\r")


def _stored_stdout(conn: sqlite3.Connection) -> dict[int, str]:
    rows: dict[int, str] = {}
    for sql in (
        "SELECT line_no, raw FROM steps",
        "SELECT line_no, raw FROM episodes",
        "SELECT line_no, raw FROM events WHERE synthesised = 0",
        "SELECT line_no, text FROM log_lines WHERE stream = 'stdout'",
    ):
        for line_no, text in conn.execute(sql):
            assert line_no not in rows, f"line {line_no} stored twice"
            rows[line_no] = text
    return rows


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(LINE, max_size=25),
    st.booleans(),
    st.lists(LINE, max_size=8),
)
def test_hostile_output_is_stored_and_the_status_is_honest(
    io_worker: str, lines: list[bytes], final_newline: bool, err_lines: list[bytes]
) -> None:
    out = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    err = b"\n".join(err_lines)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "out").write_bytes(out)
        (Path(tmp) / "err").write_bytes(err)
        store = Path(tmp) / "s.sqlite"
        config = {"mode": "replay", "path": str(Path(tmp) / "out")}
        config["stderr_file"] = str(Path(tmp) / "err")
        result = run_worker(
            io_worker, config, store=store, runs_dir=Path(tmp) / "runs", max_line_bytes=MAX_LINE
        )
        conn = sqlite3.connect(store)
        try:
            stored = _stored_stdout(conn)
            [(stderr_rows,)] = conn.execute(
                "SELECT count(*) FROM log_lines WHERE stream = 'stderr'"
            )
        finally:
            conn.close()

    expected = out.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    assert sorted(stored) == list(range(1, len(expected) + 1))
    for line_no, line in enumerate(expected, 1):
        assert stored[line_no] == _expected_text(line), line_no
    assert stderr_rows == len(err.splitlines())

    terminal = [
        json.loads(line)["event"]
        for line in expected
        if line.startswith(b'{"type": "lifecycle"') and json.loads(line)["event"] in TERMINAL
    ]
    status = TERMINAL[terminal[-1]] if terminal else "failed"
    assert result.status == status, result.error
    assert result.store_error is None and result.warnings == []
