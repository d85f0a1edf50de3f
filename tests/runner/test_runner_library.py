"""run_worker / RunSupervisor against fixture workers: storage, failures, hooks, cancels."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk import hookimpl
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.runner.reporting import Reporter
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervisor import (
    RunSupervisor,
    WorkerProtocolError,
    resolve_worker,
    run_worker,
)


def rows(store: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_every_step_line_is_stored(fixture_workers: Path, store_path: Path) -> None:
    result = run_worker("fixture", {"mode": "steps", "lines": 3000}, store=store_path)
    assert result.status == "completed"
    assert result.exit_code == 0
    assert result.runner_exit_code == 0
    assert result.counts["steps"] == 3000
    assert result.counts["episodes"] == 1
    assert result.counts["events"] == 2  # run_started, run_completed
    [(n,)] = rows(store_path, "SELECT count(*) FROM steps WHERE run_id = ?", result.run_id)
    assert n == 3000
    # the columns hold the fields and raw keeps the line as written
    first = rows(
        store_path,
        "SELECT step_index, reward, terminated, seq, raw FROM steps WHERE run_id = ?"
        " ORDER BY line_no LIMIT 1",
        result.run_id,
    )[0]
    assert first[:4] == (0, 1.0, 0, 2)
    assert json.loads(first[4])["type"] == "step"
    # the run id was a ULID and the config was written with it
    assert len(result.run_id) == 26
    written = json.loads((result.run_dir / "config.json").read_text())
    assert written["run_id"] == result.run_id


def test_sigkilled_worker_loses_no_line(fixture_workers: Path, store_path: Path) -> None:
    result = run_worker("fixture", {"mode": "sigkill", "lines": 1234}, store=store_path)
    assert result.status == "failed"
    assert result.exit_code == -9
    assert result.runner_exit_code == 1
    [(n,)] = rows(store_path, "SELECT count(*) FROM steps WHERE run_id = ?", result.run_id)
    assert n == 1234
    assert result.synthesised == ["run_failed"]
    assert "was killed by signal SIGKILL (-9)" in (result.error or "")
    [(event, synthesised, payload)] = rows(
        store_path,
        "SELECT event, synthesised, payload_json FROM events WHERE run_id = ? AND synthesised",
        result.run_id,
    )
    assert (event, synthesised) == ("run_failed", 1)
    assert json.loads(payload)["exit_code"] == -9


def test_partial_last_line_is_stored_flagged(fixture_workers: Path, store_path: Path) -> None:
    result = run_worker("fixture", {"mode": "partial"}, store=store_path)
    assert result.status == "failed"
    logs = rows(
        store_path,
        "SELECT stream, kind, partial, text FROM log_lines WHERE run_id = ? AND stream='stdout'",
        result.run_id,
    )
    assert logs == [("stdout", "invalid", 1, '{"type": "step", "episode_ind')]
    assert result.counts["steps"] == 1


def test_partial_last_line_that_is_complete_json_counts_as_telemetry(
    fixture_workers: Path, store_path: Path
) -> None:
    result = run_worker("fixture", {"mode": "partial_json"}, store=store_path)
    assert result.counts["steps"] == 1
    [(step_index, reward)] = rows(
        store_path, "SELECT step_index, reward FROM steps WHERE run_id = ?", result.run_id
    )
    assert (step_index, reward) == (9, 2.0)


def test_garbage_is_stored_as_log_lines_and_counted(
    fixture_workers: Path, store_path: Path
) -> None:
    result = run_worker("fixture", {"mode": "garbage"}, store=store_path)
    # exit 0 without run_completed is a failure that says what to do
    assert result.status == "failed"
    assert "without writing run_completed" in (result.error or "")
    kinds = rows(
        store_path,
        "SELECT line_no, kind FROM log_lines WHERE run_id = ? AND stream = 'stdout'"
        " ORDER BY line_no",
        result.run_id,
    )
    assert kinds == [(1, "log"), (2, "invalid"), (3, "invalid"), (5, "invalid")]
    # a step line with a list as reward and a string seq is kept, with NULL columns
    [(reward, seq, raw)] = rows(
        store_path, "SELECT reward, seq, raw FROM steps WHERE run_id = ?", result.run_id
    )
    assert (reward, seq) == (None, None)
    assert json.loads(raw)["reward"] == [1, 2]
    assert result.counts["log_lines"] == 4
    with RunStore(store_path) as store:
        assert store.get_run(result.run_id)["counts"]["invalid_lines"] == 3


def test_crash_gets_synthesised_failure_with_stderr(
    fixture_workers: Path, store_path: Path
) -> None:
    result = run_worker("fixture", {"mode": "crash"}, store=store_path)
    assert result.status == "failed"
    assert result.exit_code == 3
    assert "exited with code 3" in (result.error or "")
    assert "crashed on purpose" in (result.error or "")
    stderr = rows(
        store_path,
        "SELECT text FROM log_lines WHERE run_id = ? AND stream = 'stderr' ORDER BY line_no",
        result.run_id,
    )
    assert stderr == [
        ("Traceback (most recent call last):",),
        ("RuntimeError: the fixture crashed on purpose",),
    ]
    assert (result.run_dir / "stderr.log").read_text().count("\n") == 2
    [(payload,)] = rows(
        store_path, "SELECT payload_json FROM events WHERE run_id = ?", result.run_id
    )
    assert "crashed on purpose" in json.loads(payload)["stderr_tail"]


def test_missing_executable_is_a_failed_run(fixture_workers: Path, store_path: Path) -> None:
    result = run_worker("missing", {}, store=store_path)
    assert result.status == "failed"
    assert result.exit_code is None
    assert "cannot start the worker" in (result.error or "")
    with RunStore(store_path) as store:
        assert store.get_run(result.run_id)["status"] == "failed"


def test_protocol_mismatch_is_refused(fixture_workers: Path, store_path: Path) -> None:
    with pytest.raises(WorkerProtocolError, match="protocol 99"):
        run_worker("future", {}, store=store_path)
    assert not store_path.exists()


class Recorder:
    """A non-worker plugin that records the runner's hook calls."""

    def __init__(self, fail: bool = False) -> None:
        self.events: list[tuple[str, str, str, bool]] = []
        self.cleanups: list[tuple[str, str, Path, int | None]] = []
        self.fail = fail

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        self.events.append((run_id, worker, event["event"], bool(event.get("synthesised"))))
        if self.fail:
            raise RuntimeError("plugin bug")

    @hookimpl
    def mosaic_run_cleanup(
        self, run_id: str, worker: str, run_dir: Path, exit_code: int | None
    ) -> None:
        self.cleanups.append((run_id, worker, run_dir, exit_code))
        if self.fail:
            raise RuntimeError("plugin bug in cleanup")


def _handle_with(recorder: Recorder, name: str = "fixture") -> Any:
    registry = discover_workers()
    registry.pm.register(recorder, name="recorder")
    return registry.get(name)


def test_hooks_see_every_lifecycle_event_and_one_cleanup(
    fixture_workers: Path, store_path: Path
) -> None:
    recorder = Recorder()
    result = run_worker(_handle_with(recorder), {"lines": 5}, store=store_path)
    assert [e[2] for e in recorder.events] == ["run_started", "run_completed"]
    assert {(e[0], e[1]) for e in recorder.events} == {(result.run_id, "fixture")}
    assert recorder.cleanups == [(result.run_id, "fixture", result.run_dir, 0)]


def test_hooks_see_synthesised_events_and_their_errors_do_not_stop_the_run(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = Recorder(fail=True)
    reporter = Reporter()
    result = run_worker(
        _handle_with(recorder),
        {"mode": "sigkill", "lines": 50},
        store=store_path,
        reporter=reporter,
    )
    assert result.counts["steps"] == 50
    assert [(e[2], e[3]) for e in recorder.events] == [
        ("run_started", False),
        ("run_failed", True),
    ]
    assert len(recorder.cleanups) == 1 and recorder.cleanups[0][3] == -9
    assert capsys.readouterr() == ("", "")  # the library prints nothing: its reporter hears it
    told = "\n".join(reporter.warnings)
    assert "mosaic_telemetry_event hook raised RuntimeError: plugin bug" in told
    assert "mosaic_run_cleanup hook raised RuntimeError" in told


def _cancel_when_ready(supervisor: RunSupervisor, store: Path, reason: str = "test") -> None:
    """Cancel once the worker's 'ready' heartbeat is in the store (seen from another
    connection)."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                found = rows(
                    store,
                    "SELECT 1 FROM events WHERE run_id = ? AND event = 'heartbeat'",
                    supervisor.run_id,
                )
            except sqlite3.OperationalError:
                found = []
            if found:
                supervisor.cancel(reason)
                return
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()


def test_cancel_forwards_sigterm_and_keeps_workers_own_event(
    fixture_workers: Path, store_path: Path
) -> None:
    sup = RunSupervisor(resolve_worker("fixture"), {"mode": "polite"}, store=store_path, grace=30)
    _cancel_when_ready(sup, store_path)
    result = sup.run()
    assert result.status == "cancelled"
    assert result.runner_exit_code == 130
    assert result.synthesised == []  # the worker wrote run_cancelled itself
    events = rows(store_path, "SELECT event FROM events WHERE run_id = ?", result.run_id)
    assert [e for (e,) in events][-1] == "run_cancelled"


def test_cancel_kills_a_worker_that_ignores_sigterm_after_grace(
    fixture_workers: Path, store_path: Path
) -> None:
    recorder = Recorder()
    handle = _handle_with(recorder)
    sup = RunSupervisor(handle, {"mode": "stubborn"}, store=store_path, grace=0.3)
    _cancel_when_ready(sup, store_path, reason="SIGINT received by mosaic run")
    result = sup.run()
    assert result.status == "cancelled"
    assert result.exit_code == -9
    assert result.synthesised == ["run_cancelled"]
    assert recorder.events[-1][2:] == ("run_cancelled", True)
    [(payload,)] = rows(
        store_path,
        "SELECT payload_json FROM events WHERE run_id = ? AND synthesised = 1",
        result.run_id,
    )
    assert json.loads(payload)["reason"] == "SIGINT received by mosaic run"


def test_lines_reach_the_store_while_the_worker_runs(
    fixture_workers: Path, store_path: Path
) -> None:
    """Fewer than 256 lines, written slowly: they are committed by the 100 ms deadline, so
    another connection sees steps while the run is still going."""
    sup = RunSupervisor(
        resolve_worker("fixture"), {"mode": "slow", "lines": 60, "delay": 0.05}, store=store_path
    )
    seen_while_running: list[int] = []
    mismatches: list[tuple[int, int]] = []
    # One statement, so the counter and the rows come from one snapshot of the store (two
    # statements on two connections can straddle a commit and disagree by a batch).
    query = (
        "SELECT status, steps, (SELECT count(*) FROM steps WHERE run_id = ?1)"
        " FROM runs WHERE run_id = ?1"
    )

    def watch() -> None:
        while not seen_while_running:
            try:
                [(status, steps, n)] = rows(store_path, query, sup.run_id)
            except (sqlite3.OperationalError, ValueError):
                time.sleep(0.01)
                continue
            if status == "running" and 0 < n < 60:
                if steps != n:  # counters are updated in the same transaction
                    mismatches.append((steps, n))
                seen_while_running.append(n)
            if status != "running":
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result = sup.run()
    watcher.join(5)
    assert result.counts["steps"] == 60
    assert mismatches == [], "the runs counter disagreed with the stored rows"
    assert seen_while_running, "no step was visible in the store before the run ended"


def test_batches_hold_at_most_batch_lines(
    fixture_workers: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.runner.storage.writer import StoreWriter

    handed: list[int] = []
    submit = StoreWriter.submit

    def recording(self: StoreWriter, batch: Any) -> None:
        handed.append(batch.lines)
        submit(self, batch)

    monkeypatch.setattr(StoreWriter, "submit", recording)
    sup = RunSupervisor(
        resolve_worker("fixture"), {"lines": 2000}, store=store_path, batch_lines=100
    )
    result = sup.run()
    assert result.counts["steps"] == 2000
    # every batch handed to the writer holds at most 100 stdout lines (the writer may then
    # commit batches that queued up together)
    assert max(handed) <= 100 and sum(handed) == result.counts["lines"]
    assert len(handed) >= 21


def test_a_grandchild_holding_stdout_is_reaped(fixture_workers: Path, store_path: Path) -> None:
    result = run_worker("fixture", {"mode": "orphan", "lines": 3}, store=store_path)
    assert result.status == "completed"
    assert result.counts["steps"] == 3


def test_same_run_id_twice_is_refused(fixture_workers: Path, store_path: Path) -> None:
    from mosaic_sdk.runner.storage.store import StoreError

    run_worker("fixture", {"lines": 1}, run_id="twice", store=store_path)
    with pytest.raises(StoreError, match="already in the store"):
        run_worker("fixture", {"lines": 1}, run_id="twice", store=store_path)


def test_default_store_is_under_mosaic_home(fixture_workers: Path) -> None:
    result = run_worker("fixture", {"lines": 2})
    home = Path(os.environ["MOSAIC_HOME"])
    assert result.store_path == home / "runs.sqlite"
    assert result.run_dir == home / "runs" / result.run_id


def test_a_store_write_error_fails_the_run_and_says_so(
    fixture_workers: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.runner.storage import writer

    real_insert = writer.insert_batch

    def failing_insert(conn, run_id, batch):  # type: ignore[no-untyped-def]
        if batch.steps:
            raise sqlite3.OperationalError("database or disk is full")
        return real_insert(conn, run_id, batch)

    monkeypatch.setattr(writer, "insert_batch", failing_insert)
    monkeypatch.setattr(writer, "GIVE_UP_AFTER", 0.5)  # the disk stays full: give up soon
    result = run_worker("fixture", {"lines": 20}, store=store_path)
    assert result.status == "failed"
    assert result.runner_exit_code == 1
    assert result.lost_rows >= 20  # the 20 step rows (and what was queued behind them)
    assert (
        f"storing the run failed (OperationalError: database or disk is full); "
        f"{result.lost_rows} rows lost" in (result.error or "")
    )
    assert result.store_error == "database or disk is full"
    with RunStore(store_path) as store:
        run = store.get_run(result.run_id)
    assert run["status"] == "failed"
    assert run["lost_rows"] == result.lost_rows
    assert f"{result.lost_rows} rows lost" in run["error"]


def test_a_crash_of_the_runner_itself_is_recorded_and_kills_the_worker(
    fixture_workers: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.runner.recording import ingest

    def broken_add(self, batch, raws, partial_last=False):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug in the runner")

    monkeypatch.setattr(ingest.LineIngest, "add", broken_add)
    sup = RunSupervisor(resolve_worker("fixture"), {"mode": "stubborn"}, store=store_path)
    with pytest.raises(RuntimeError, match="a bug in the runner"):
        sup.run()
    [(status, error, pid)] = rows(
        store_path, "SELECT status, error, worker_pid FROM runs WHERE run_id = ?", sup.run_id
    )
    assert status == "failed"
    assert error == "mosaic run itself failed: RuntimeError: a bug in the runner"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_run_id_comes_from_the_argument_then_the_config(
    fixture_workers: Path, store_path: Path
) -> None:
    from_config = run_worker("fixture", {"lines": 1, "run_id": "cfg-id"}, store=store_path)
    assert from_config.run_id == "cfg-id"
    both = run_worker(
        "fixture", {"lines": 1, "run_id": "same-id"}, run_id="same-id", store=store_path
    )
    assert both.run_id == "same-id"
    written = json.loads((both.run_dir / "config.json").read_text())
    assert written["run_id"] == "same-id"
    from_arg = run_worker("fixture", {"lines": 1}, run_id="arg-id", store=store_path)
    assert json.loads((from_arg.run_dir / "config.json").read_text())["run_id"] == "arg-id"


def test_cleanup_hook_removes_the_fastlane_segment_of_a_killed_worker(
    fixture_workers: Path, store_path: Path
) -> None:
    """The built-in FastLane plugin's mosaic_run_cleanup runs after a SIGKILL: no segment of
    the run is left in /dev/shm."""
    from mosaic_sdk.shm.segment import shm_unlink

    run_id = f"fl-kill-{os.getpid()}"
    segment = f"mosaic.fastlane.{run_id}"
    try:
        result = run_worker(
            "fixture", {"mode": "fastlane_sigkill"}, run_id=run_id, store=store_path
        )
        [(payload,)] = rows(
            store_path, "SELECT payload_json FROM events WHERE event = 'run_started'"
        )
        assert json.loads(payload)["segment"] == segment  # the worker did create it
        assert result.exit_code == -9
        assert not Path("/dev/shm", segment).exists()
    finally:
        shm_unlink(segment)  # never leave one behind, even when the test fails
