"""Run health: the runner notices a worker that stopped writing (issue 24, "run health").

A run past its stall limit (``--stall-after``, or 3 x the heartbeat interval the worker
declared) gets a synthesised ``stalled`` event, shows as stalled in ``mosaic runs`` while it
lasts, and with ``--on-stall cancel`` is stopped the usual way and ends ``failed``. The hung
worker is a real process (``mode=hang`` of the fixture workers): alive, silent.
"""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from mosaic_sdk.cli import main
from mosaic_sdk.runner.live import PlainDisplay, RichDisplay, Snapshot
from mosaic_sdk.runner.recording.health import (
    RECOVERED_EVENT,
    STALLED_EVENT,
    RunHealth,
    stall_limit_value,
)
from mosaic_sdk.runner.reporting import Reporter
from mosaic_sdk.runner.storage.store import RunStore, status_text
from mosaic_sdk.runner.supervisor import RunSupervisor, resolve_worker, run_worker
from mosaic_sdk.telemetry import Heartbeat, TelemetryEmitter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- the decision, on a clock of our own ---------------------------------------------------------


def test_no_declared_interval_and_no_limit_is_never_stalled() -> None:
    clock = Clock()
    health = RunHealth(None, clock=clock)
    health.last_line_at = clock.now
    clock.now += 10_000
    assert health.limit is None
    assert health.check(clock.now) is None


def test_the_limit_is_three_declared_heartbeat_intervals() -> None:
    clock = Clock()
    health = RunHealth(None, clock=clock)
    health.on_events([{"event": "heartbeat", "payload": {"interval": 2.0}}], clock.now)
    health.last_line_at = clock.now
    assert health.limit == 6.0
    clock.now += 5.9
    assert health.check(clock.now) is None
    clock.now += 0.2
    change = health.check(clock.now)
    assert change is not None and change["event"] == STALLED_EVENT
    assert change["limit_seconds"] == 6.0 and change["silent_seconds"] == pytest.approx(6.1)
    assert "heartbeat interval 2 s" in change["limit_from"]
    assert health.check(clock.now + 100) is None  # said once, not at every check
    health.last_line_at = clock.now + 101
    back = health.check(clock.now + 101)
    assert back == {"event": RECOVERED_EVENT, "silent_seconds": pytest.approx(107.1)}
    assert health.stalled_at is None


def test_run_started_may_declare_the_interval() -> None:
    health = RunHealth(None)
    health.on_events([{"event": "run_started", "payload": {"heartbeat_interval": 0.5}}], 0.0)
    assert health.limit == 1.5
    # nonsense declarations are ignored, not trusted
    for bad in (0, -1, float("nan"), float("inf"), True, "5"):
        h = RunHealth(None)
        h.on_events([{"event": "heartbeat", "payload": {"interval": bad}}], 0.0)
        assert h.limit is None, bad


def test_the_runners_limit_overrides_and_zero_turns_it_off() -> None:
    clock = Clock()
    health = RunHealth(1.0, clock=clock)
    health.on_events([{"event": "heartbeat", "payload": {"interval": 30}}], clock.now)
    assert health.limit == 1.0
    off = RunHealth(0.0, clock=clock)
    off.on_events([{"event": "heartbeat", "payload": {"interval": 1}}], clock.now)
    clock.now += 1000
    assert off.limit is None and off.check(clock.now) is None
    # silence counts from the start when the worker never wrote a line
    change = health.check(clock.now)
    assert change is not None and change["last_line_unix"] is None


def test_stall_limit_values() -> None:
    assert stall_limit_value(None, "x") is None
    assert stall_limit_value("off", "x") == 0.0
    assert stall_limit_value("2.5", "x") == 2.5
    for bad in ("soon", "-1", "nan", "inf", True):
        with pytest.raises(ValueError, match="give a number of seconds >= 0"):
            stall_limit_value(bad, "--stall-after")


def test_the_sdk_heartbeat_declares_its_interval() -> None:
    import io

    out = io.StringIO()
    em = TelemetryEmitter("r1", out, flush_interval=0)
    Heartbeat(em, interval=7.5).beat()
    em.close()
    line = json.loads(out.getvalue().splitlines()[-1])
    assert line["event"] == "heartbeat" and line["payload"]["interval"] == 7.5
    from mosaic_sdk.telemetry.reader import classify_line

    assert classify_line(out.getvalue().splitlines()[-1]).kind == "lifecycle"  # still valid


# -- real runs ----------------------------------------------------------------------------------


def stored_events(store: Path, run_id: str) -> list[dict[str, Any]]:
    with RunStore(store, readonly=True) as s:
        return s.events(run_id)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_on_stall_cancel_stops_a_hung_worker_and_it_fails_saying_so(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, err = run_cli(
        capsys,
        "run",
        "fixture",
        "--set",
        "mode=hang",
        "--set",
        "lines=3",
        "--stall-after",
        "1",
        "--on-stall",
        "cancel",
        "--grace",
        "2",
        "--no-preflight",
        "--json",
        "--store",
        str(store_path),
    )
    assert code == 1, err
    assert result["status"] == "failed"
    assert result["error"].startswith("stalled: no output for ")
    assert "limit 1 s, set by the runner" in result["error"]
    assert "stalled" in err and "stopping it" in err  # the reporter said so, once
    events = stored_events(store_path, result["run_id"])
    names = [e["event"] for e in events]
    assert names[0] == "run_started" and STALLED_EVENT in names
    stalled = events[names.index(STALLED_EVENT)]
    assert stalled["synthesised"] == 1
    payload = json.loads(stalled["payload_json"])
    assert payload["limit_seconds"] == 1 and payload["silent_seconds"] >= 1
    failed = json.loads(events[-1]["payload_json"])
    assert events[-1]["event"] == "run_failed" and failed["error_type"] == "Stalled"
    with RunStore(store_path, readonly=True) as s:
        run = s.get_run(result["run_id"])
    assert run["stalled"] is None and status_text(run) == "failed"  # ended: no longer stalled


def test_a_declared_heartbeat_interval_is_enough(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, err = run_cli(
        capsys,
        "run",
        "fixture",
        "--set",
        "mode=hang",
        "--set",
        "heartbeat_interval=0.2",
        "--on-stall",
        "cancel",
        "--no-preflight",
        "--json",
        "--store",
        str(store_path),
    )
    assert code == 1, err
    assert result["status"] == "failed"
    assert "3 x the declared heartbeat interval 0.2 s" in result["error"]


@pytest.mark.parametrize(
    ("config", "stall_after"),
    [
        ({"mode": "hang", "lines": 1}, None),  # no declared interval, no limit
        ({"mode": "hang", "lines": 1, "heartbeat_interval": 0.2}, 0.0),  # declared, but off
    ],
)
def test_without_a_limit_nothing_is_called_stalled(
    fixture_workers: Path, store_path: Path, config: dict[str, Any], stall_after: float | None
) -> None:
    reporter = Reporter()
    sup = RunSupervisor(
        resolve_worker("fixture"),
        config,
        store=store_path,
        grace=2,
        time_limit=1.5,
        stall_after=stall_after,
        on_stall="cancel",
        reporter=reporter,
    )
    result = sup.run()
    assert result.status == "failed" and result.error.startswith("timed out after 1.5 s")
    assert STALLED_EVENT not in [e["event"] for e in stored_events(store_path, result.run_id)]
    assert not [w for w in reporter.warnings if "stalled" in w]


def test_warn_marks_the_run_and_it_recovers_when_lines_come_again(
    fixture_workers: Path, store_path: Path
) -> None:
    reporter = Reporter()
    result = run_worker(
        "fixture",
        {"mode": "hang_then_resume", "delay": 3.0, "lines": 5},
        store=store_path,
        stall_after=0.8,
        reporter=reporter,
    )
    assert result.status == "completed", result.error  # warn: the run goes on
    names = [e["event"] for e in stored_events(store_path, result.run_id)]
    # (a worker slow to start may be called stalled before its first line, too)
    after = names[names.index("run_started") :]
    assert after == ["run_started", STALLED_EVENT, RECOVERED_EVENT, "run_completed"]
    assert any("stalled: no output" in w for w in reporter.warnings)
    assert any("recovered" in w for w in reporter.warnings)
    # the runner's events do not count as the worker's telemetry
    assert result.counts["steps"] == 6


class Snapshots:
    """A display that keeps what the live view was given."""

    def __init__(self) -> None:
        self.seen: list[Snapshot] = []

    def update(self, snap: Snapshot) -> None:
        self.seen.append(snap)

    def finish(self, snap: Snapshot) -> None:
        self.seen.append(snap)


def test_the_live_views_show_the_stall() -> None:
    snap = Snapshot(
        run_id="r1",
        worker="w",
        elapsed=5.0,
        steps=3,
        episodes=0,
        events=2,
        log_lines=0,
        recent_returns=[],
        last_event="stalled",
        health="stalled: no output for 4 s (limit 3 s)",
    )
    assert "health='stalled: no output for 4 s (limit 3 s)'" in PlainDisplay().line(snap, 0.0)
    console = Console(file=io.StringIO(), width=120)
    console.print(RichDisplay(console=console).render(snap, 0.0))
    assert "running (stalled: no output for 4 s (limit 3 s))" in console.file.getvalue()
    snap.health = None
    assert "health" not in PlainDisplay().line(snap, 0.0)


def test_a_stalled_running_run_shows_as_stalled_in_runs_list_and_show(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    view = Snapshots()
    sup = RunSupervisor(
        resolve_worker("fixture"),
        {"mode": "hang", "lines": 2},
        store=store_path,
        grace=2,
        stall_after=0.3,
        reporter=Reporter(),
        display=view,
    )
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(sup.run()), daemon=True)
    thread.start()
    try:
        # Wait for the stall that follows the worker's last line: on a loaded machine a slow
        # start can stall (and recover) first, and the run is not stalled in between.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            names = [e["event"] for e in stored_events(store_path, sup.run_id)]
            after = names[names.index("run_started") + 1 :] if "run_started" in names else []
            health = [n for n in after if n in (STALLED_EVENT, RECOVERED_EVENT)]
            if health and health[-1] == STALLED_EVENT:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no lasting stall within 30 s")
        assert main(["runs", "list", "--json", "--store", str(store_path)]) == 0
        [listed] = json.loads(capsys.readouterr().out)
        assert listed["status"] == "running" and listed["stalled"]["limit_seconds"] == 0.3
        assert main(["runs", "show", sup.run_id, "--json", "--store", str(store_path)]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["stalled"]["silent_seconds"] >= 0.3
        assert main(["runs", "list", "--store", str(store_path)]) == 0
        table = capsys.readouterr().out
        assert "running (stalled: no output for " in table and "limit 0.3 s)" in table
        assert main(["runs", "show", sup.run_id, "--store", str(store_path)]) == 0
        assert "running (stalled: " in capsys.readouterr().out
    finally:
        sup.cancel("the test is over")
        thread.join(30)
    assert done and done[0].status == "cancelled"  # warn only: the user cancelled it
    stalled_views = [v.health for v in view.seen if v.health]
    assert stalled_views and stalled_views[-1].startswith("stalled: no output for ")


def test_bad_stall_options_are_usage_errors(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "fixture", "--stall-after", "soon", "--store", str(store_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--stall-after: give a number of seconds >= 0" in err
    assert "Traceback" not in err
