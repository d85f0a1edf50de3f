"""Nothing a worker writes is read as Rich markup or obeyed as terminal control."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from mosaic_sdk.cli import main
from mosaic_sdk.runner import run_worker
from mosaic_sdk.runner.live import PlainDisplay, RichDisplay, Snapshot
from mosaic_sdk.runner.printable import printable

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from io_workers import HOSTILE_EVENTS, HOSTILE_STDERR  # noqa: E402

sys.path.remove(str(FIXTURES))

#: What the hostile worker's escapes would do if obeyed; none may reach the terminal.
OBEYED = ["\x1b]0;PWNED", "\x1b[2J", "\x1b[31mRED", "\x1b]8;;http://evil", "\x07and\x08", "\u202e"]


def _snap(last_event: str) -> Snapshot:
    return Snapshot(
        run_id="r1",
        worker="w",
        elapsed=1.0,
        steps=5,
        episodes=1,
        events=2,
        log_lines=1,
        recent_returns=[1.0],
        last_event=last_event,
    )


def _no_obeyed_escapes(text: str) -> None:
    for seq in OBEYED:
        assert seq not in text, (seq, text)


# --- printable -------------------------------------------------------------------------------


def test_printable_escapes_controls_and_keeps_the_rest() -> None:
    assert printable("plain [/x] é 👩\u200d💻 日本") == "plain [/x] é 👩\u200d💻 日本"
    assert printable("\x1b[31mred\x07") == "\\x1b[31mred\\x07"
    assert printable("a\tb\nc\rd\x9b2J\x7f") == "a\\x09b\\x0ac\\x0dd\\x9b2J\\x7f"
    assert printable("\u202etxt.exe\u2066") == "\\u202etxt.exe\\u2066"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None)))
def test_printable_leaves_no_control_character(text: str) -> None:
    out = printable(text)
    assert not any(unicodedata.category(ch) == "Cc" for ch in out)
    assert not any(0x202A <= ord(ch) <= 0x202E or 0x2066 <= ord(ch) <= 0x2069 for ch in out)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))
)
def test_printable_text_can_always_be_printed_as_utf8(text: str) -> None:
    """Lone surrogates too (hypothesis leaves category Cs out unless told): a file name read
    with surrogateescape must not end ``mosaic runs show`` with UnicodeEncodeError."""
    printable(text).encode("utf-8")


def test_printable_escapes_lone_surrogates() -> None:
    assert printable("/data/\udcff.bin \ud800") == "/data/\\udcff.bin \\ud800"


# --- the live view ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_EVENTS)
def test_rich_view_on_a_terminal_shows_hostile_names_as_text(name: str) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system="truecolor")
    view = RichDisplay(console=console)
    view.update(_snap(name))
    view.finish(_snap(name))
    text = out.getvalue()
    _no_obeyed_escapes(text)
    assert printable(name) in text  # shown, escaped, not interpreted


def test_rich_view_shows_markup_literally() -> None:
    out = io.StringIO()
    view = RichDisplay(console=Console(file=out, force_terminal=True, width=100))
    view.update(_snap("[bold red]styled[/bold red] [/x]"))
    view.finish(_snap("[bold red]styled[/bold red] [/x]"))
    assert "[bold red]styled[/bold red] [/x]" in out.getvalue()


@pytest.mark.parametrize("name", HOSTILE_EVENTS)
def test_plain_view_escapes_hostile_names(name: str) -> None:
    out = io.StringIO()
    view = PlainDisplay(out, interval=0)
    view._next = 0.0
    view.update(_snap(name))
    _no_obeyed_escapes(out.getvalue())
    assert f"last_event={printable(name)}" in out.getvalue()


# --- mosaic runs show and the store ------------------------------------------------------------


def test_runs_show_escapes_what_the_store_keeps_intact(
    io_worker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.sqlite"
    result = run_worker(io_worker, {"mode": "hostile_names"}, store=store, runs_dir=tmp_path / "r")
    assert result.status == "completed", result.error
    capsys.readouterr()

    assert main(["runs", "show", result.run_id, "--store", str(store), "--events", "20"]) == 0
    out = capsys.readouterr().out
    _no_obeyed_escapes(out)
    assert "\x1b" not in out and "\x07" not in out
    for name in HOSTILE_EVENTS:
        assert printable(name) in out
    assert printable(HOSTILE_STDERR) in out
    assert main(["runs", "list", "--store", str(store)]) == 0
    assert "\x1b" not in capsys.readouterr().out

    # --json and the store keep every byte the worker wrote
    assert main(["runs", "show", result.run_id, "--store", str(store), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [e["event"] for e in shown["last_events"]] == [*HOSTILE_EVENTS, "run_completed"]
    assert HOSTILE_STDERR in [line["text"] for line in shown["last_log_lines"]]
    conn = sqlite3.connect(store)
    try:
        names = [r[0] for r in conn.execute("SELECT event FROM events ORDER BY line_no")]
    finally:
        conn.close()
    assert names == [*HOSTILE_EVENTS, "run_completed"]


# --- end to end, under a terminal --------------------------------------------------------------


def _run_under_pty(argv: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer of the terminal has gone
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_mosaic_run_in_a_terminal_survives_hostile_names(io_worker: str, tmp_path: Path) -> None:
    env = dict(os.environ, COLUMNS="120", LINES="40", TERM="xterm-256color")
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", io_worker, "--set", "mode=hostile_names"]
    argv += ["--store", str(tmp_path / "s.sqlite"), "--runs-dir", str(tmp_path / "runs")]
    code, out = _run_under_pty(argv, env)
    assert code == 0, out
    assert "completed" in out and "itself failed" not in out
    _no_obeyed_escapes(out)


def test_runs_show_prints_an_analytics_manifest_holding_lone_surrogates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hostile pass of issue 24: a worker wrote analytics.json with names from a non-UTF-8
    disk; ``mosaic runs show RUN`` ended in a UnicodeEncodeError traceback."""
    from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
    from mosaic_sdk.runner.storage.store import RunStore

    store, run_dir = tmp_path / "s.sqlite", tmp_path / "r1"
    with RunStore(store) as s:
        s.create_run("r1", "w", run_dir=run_dir)
    manifest = AnalyticsManifest(
        run_id="r1",
        worker_type="w",
        status="completed",
        episodes=1,
        steps=1,
        duration_seconds=0.1,
        env_id="E\udcff",
        algo="\ud800",
        tensorboard_dirs=["/data/\udcff.bin"],
    )
    write_analytics(run_dir, manifest)
    assert main(["runs", "show", "r1", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "env_id E\\udcff, algo \\ud800" in out
    assert "/data/\\udcff.bin" in out


def test_runs_list_escapes_what_the_store_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.runner.storage.store import RunStore

    store = tmp_path / "s.sqlite"
    with RunStore(store) as s:  # a store written by anything: trust none of its text
        s.create_run("r1", "\x1b]0;PWNED\x07[/x]")
    assert main(["runs", "list", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b]0;PWNED\\x07[/x]" in out
