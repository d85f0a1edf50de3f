"""Every reader of worker output is bounded and linear, and the stderr drain never stops."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mosaic_sdk.runner import run_worker
from mosaic_sdk.runner.supervision.lines import CutLine, LineSplitter
from mosaic_sdk.runner.supervision.process import _CHUNK, WorkerProcess
from mosaic_sdk.runner.supervisor import RUNNER_NOTE, RunSupervisor, resolve_worker

MiB = 1 << 20


# --- LineSplitter ------------------------------------------------------------------------------


def _split_in(data: bytes, cuts: list[int], splitter: LineSplitter) -> list[bytes]:
    out: list[bytes] = []
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts) + [len(data)]:
        out += splitter.feed(data[start:cut])
        start = cut
    last = splitter.finish()
    return out + ([] if last is None else [last])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=8))
def test_splitter_gives_the_lines_of_bytes_split_however_chunked(
    data: bytes, cuts: list[int]
) -> None:
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    assert _split_in(data, cuts, LineSplitter()) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b"\x00"]), max_size=40),
    st.lists(st.integers(0, 80), max_size=8),
)
def test_splitter_with_cr_gives_splitlines_however_chunked(
    parts: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(parts)
    assert _split_in(data, cuts, LineSplitter(cr=True)) == data.splitlines()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=8), st.integers(1, 20))
def test_splitter_cuts_long_lines_and_counts_what_it_dropped(
    data: bytes, cuts: list[int], limit: int
) -> None:
    splitter = LineSplitter(limit)
    lines = _split_in(data, cuts, splitter)
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    assert len(lines) == len(expected)
    for got, full in zip(lines, expected, strict=True):
        assert got == full[:limit]
        assert (type(got) is CutLine) == (len(full) > limit)
        if type(got) is CutLine:
            assert got.dropped == len(full) - limit
            assert f"{got.dropped} bytes were dropped" in got.note()
    assert splitter.peak_pending <= limit


# --- WorkerProcess --------------------------------------------------------------------------


def _drain(proc: WorkerProcess) -> list[bytes]:
    out: list[bytes] = []
    while True:
        lines, eof = proc.read_lines(5)
        out += lines
        if eof:
            return out


def test_a_line_longer_than_the_maximum_is_cut_and_memory_stays_bounded() -> None:
    size = 40 * MiB
    code = (
        "import sys; o = sys.stdout.buffer; o.write(b'first\\n'); b = b'y' * (1 << 20)\n"
        f"for _ in range({size // MiB}): o.write(b)\n"
        "o.write(b'\\nafter\\n')"
    )
    proc = WorkerProcess([sys.executable, "-c", code], max_line_bytes=MiB)
    try:
        lines = _drain(proc)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill_group()
        proc.close()
    assert lines[0] == b"first" and lines[2] == b"after" and len(lines) == 3
    cut = lines[1]
    assert type(cut) is CutLine and cut == b"y" * MiB and cut.dropped == size - MiB
    # the reader never held more than the maximum of one unfinished line
    assert proc._stdout_lines.peak_pending <= MiB < MiB + _CHUNK


def test_cr_progress_on_stderr_is_one_line_per_redraw() -> None:
    count = 20_000
    code = (
        "import sys\n"
        f"for i in range({count}): sys.stderr.write(f'\\rstep {{i}} ' + '#' * (i % 50))\n"
        "sys.stderr.write('\\r\\ndone\\n')"
    )
    got: list[bytes] = []
    proc = WorkerProcess(
        [sys.executable, "-c", code], on_stderr_lines=lambda lines, partial: got.extend(lines)
    )
    try:
        _drain(proc)
        proc.wait(timeout=30)
        assert proc.join_stderr(timeout=30)
    finally:
        proc.close()
    assert got[0] == b""  # the first "\r" ends an empty line
    assert got[1] == b"step 0 " and got[count] == b"step 19999 " + b"#" * (19999 % 50)
    assert got[-1] == b"done" and len(got) == count + 2
    assert proc._stderr_lines.peak_pending < 100  # never the whole progress bar


def _flood_stderr_then_exit(size: int) -> str:
    return (
        "import sys; e = sys.stderr.buffer\n"
        f"for _ in range({size // 100}): e.write(b'e' * 99 + b'\\n')\n"
        "e.write(b'last stderr line\\n'); e.flush(); print('done')"
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_does_not_stop_the_stderr_drain() -> None:
    """Writing stderr.log fails with ENOSPC: the worker must not block on a full pipe."""
    got: list[bytes] = []
    proc = WorkerProcess(
        [sys.executable, "-c", _flood_stderr_then_exit(2 * MiB)],
        stderr_path=Path("/dev/full"),
        on_stderr_lines=lambda lines, partial: got.extend(lines),
    )
    try:
        assert _drain(proc) == [b"done"]
        assert proc.wait(timeout=30) == 0, "the worker blocked writing stderr"
        assert proc.join_stderr(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill_group()
            proc.wait()
        proc.close()
    assert len(got) == 2 * MiB // 100 + 1 and got[-1] == b"last stderr line"
    assert proc.stderr_text(limit=1) == "last stderr line"
    [problem] = proc.stderr_problems()
    assert "No space left on device" in problem
    assert f"{2 * MiB // 100 * 100 + 17} bytes not written" in problem


def test_a_callback_that_raises_does_not_stop_the_stderr_drain(tmp_path: Path) -> None:
    def broken(lines: list[bytes], partial: bool) -> None:
        raise RuntimeError("boom")

    log = tmp_path / "stderr.log"
    proc = WorkerProcess(
        [sys.executable, "-c", _flood_stderr_then_exit(MiB)],
        stderr_path=log,
        on_stderr_lines=broken,
    )
    try:
        assert _drain(proc) == [b"done"]
        assert proc.wait(timeout=30) == 0
        assert proc.join_stderr(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill_group()
            proc.wait()
        proc.close()
    assert log.read_bytes().endswith(b"last stderr line\n")
    [problem] = proc.stderr_problems()
    assert "RuntimeError: boom" in problem


# --- the whole runner ------------------------------------------------------------------------


def test_run_stores_a_cut_long_line_and_goes_on(io_worker: str, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = run_worker(
        io_worker,
        {"mode": "long_line", "size": 5 * MiB},
        store=store,
        runs_dir=tmp_path / "runs",
        max_line_bytes=MiB,
    )
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 2
    conn = sqlite3.connect(store)
    try:
        [(kind, error, length)] = conn.execute(
            "SELECT kind, error, length(text) FROM log_lines WHERE stream = 'stdout'"
        )
    finally:
        conn.close()
    assert kind == "log" and length == MiB
    assert f"line of {5 * MiB} bytes" in error and f"{4 * MiB} bytes were dropped" in error


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_run_with_a_full_disk_for_stderr_log_completes_and_says_so(
    io_worker: str, tmp_path: Path
) -> None:
    store = tmp_path / "s.sqlite"
    sup = RunSupervisor(
        resolve_worker(io_worker),
        {"mode": "stderr_flood", "size": MiB},
        store=store,
        runs_dir=tmp_path / "runs",
    )
    sup.stderr_path = Path("/dev/full")  # every write fails with ENOSPC
    result = sup.run()
    assert result.status == "completed", result.error
    [warning] = result.warnings
    assert "No space left on device" in warning and "the store has every line" in warning
    conn = sqlite3.connect(store)
    try:
        rows = conn.execute(
            "SELECT text, error FROM log_lines WHERE stream = 'stderr' ORDER BY line_no"
        ).fetchall()
    finally:
        conn.close()
    assert len(rows) == MiB // 100 + 2  # every line the worker wrote, and the runner's note
    assert rows[-2] == ("last stderr line", None)
    assert rows[-1] == (warning, RUNNER_NOTE)


def test_cr_progress_through_the_runner_is_linear_lines(io_worker: str, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = run_worker(
        io_worker, {"mode": "cr_progress", "count": 5000}, store=store, runs_dir=tmp_path / "r"
    )
    assert result.status == "completed", result.error
    assert result.counts["stderr_lines"] == 5001  # "" before the first "\r", then each redraw


def test_mosaic_run_max_line_bytes_option(
    io_worker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main

    store = tmp_path / "s.sqlite"
    argv = ["run", io_worker, "--set", "mode=long_line", "--set", "size=5000", "--quiet"]
    argv += ["--store", str(store), "--runs-dir", str(tmp_path / "runs")]
    assert main([*argv, "--max-line-bytes", "1000", "--run-id", "cut"]) == 0
    assert main([*argv, "--max-line-bytes", "0"]) == 2
    assert "--max-line-bytes 0: give a number of bytes >= 1" in capsys.readouterr().err
    conn = sqlite3.connect(store)
    try:
        [(length, error)] = conn.execute("SELECT length(text), error FROM log_lines")
    finally:
        conn.close()
    assert length == 1000 and "4000 bytes were dropped" in error
