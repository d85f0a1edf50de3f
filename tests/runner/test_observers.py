"""Observer plugins (mosaic_telemetry_steps / mosaic_telemetry_episodes): they see every stored
row, in order; a slow one misses rows for itself only, counted; a failing one is reported once
and disabled; ingest and the store never depend on them."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pluggy
import pytest
from mosaic_sdk.runner.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.observers import EpisodeRow, ObserverFeed, RowBatch, StepRow
from mosaic_sdk.runner.store import RunStore

from mosaic_sdk import hookimpl
from mosaic_sdk.cli import main
from mosaic_sdk.plugins import create_plugin_manager, discover_workers
from mosaic_sdk.runner import observers as observers_mod
from mosaic_sdk.runner.reporting import Reporter
from mosaic_sdk.runner.supervisor import run_worker


def rows(store: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


class Collector:
    """Records what each observer hook receives (and on which thread)."""

    def __init__(self) -> None:
        self.steps: list[StepRow] = []
        self.episodes: list[EpisodeRow] = []
        self.calls = 0
        self.run_ids: set[str] = set()
        self.threads: set[str] = set()

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
        self.calls += 1
        self.run_ids.add(run_id)
        self.threads.add(threading.current_thread().name)
        self.steps.extend(steps)

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list[EpisodeRow]) -> None:
        self.run_ids.add(run_id)
        self.episodes.extend(episodes)


class EpisodesOnly:
    def __init__(self) -> None:
        self.episodes: list[EpisodeRow] = []

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list[EpisodeRow]) -> None:
        self.episodes.extend(episodes)


def _handle(**plugins: Any) -> Any:
    registry = discover_workers()
    for name, plugin in plugins.items():
        registry.pm.register(plugin, name=name)
    return registry.get("fixture")


def test_hook_mosaic_telemetry_steps_sees_every_stored_step_in_order(
    fixture_workers: Path, store_path: Path
) -> None:
    seen = Collector()
    result = run_worker(_handle(seen=seen), {"lines": 3000}, store=store_path, batch_lines=256)
    assert result.status == "completed", result.error
    stored = rows(
        store_path,
        "SELECT * FROM steps WHERE run_id = ? ORDER BY line_no",
        result.run_id,
    )
    assert len(stored) == 3000
    assert [tuple(s) for s in seen.steps] == stored  # the rows as stored, in stored order
    first = seen.steps[0]
    assert isinstance(first, StepRow)
    assert (first.step_index, first.reward, first.agent_id) == (0, 1.0, None)
    assert json.loads(first.raw)["type"] == "step"
    assert seen.run_ids == {result.run_id}
    assert seen.threads == {"mosaic-observer-seen"}  # its own thread, not the reader's
    assert 1 <= seen.calls <= len(stored)  # batched (coalesced when it lags)
    assert result.observers == [
        {
            "name": "seen",
            "delivered_steps": 3000,
            "delivered_episodes": 1,
            "missed_steps": 0,
            "missed_episodes": 0,
            "error": None,
            "delivered_points": 0,
            "missed_points": 0,
        }
    ]


def test_hook_mosaic_telemetry_episodes_sees_every_episode_with_its_agent(
    fixture_workers: Path, store_path: Path
) -> None:
    both, only = Collector(), EpisodesOnly()
    result = run_worker(
        _handle(both=both, only=only), {"mode": "agents", "lines": 4}, store=store_path
    )
    assert result.status == "completed", result.error
    expected = [("red", 1.0), ("red", 3.0), ("blue", -1.0)]
    for observer in (both, only):
        assert [(e.agent_id, e.total_reward) for e in observer.episodes] == expected
        assert all(isinstance(e, EpisodeRow) for e in observer.episodes)
    assert [s.agent_id for s in both.steps] == ["red"] * 4 + ["blue"] * 2
    reports = {r["name"]: r for r in result.observers}
    # a plugin that implements only the episodes hook is never given steps
    assert reports["only"]["delivered_steps"] == 0 and reports["only"]["delivered_episodes"] == 3
    assert reports["both"]["delivered_steps"] == 6


class Blocked:
    """An observer whose first call waits until the run has been stored to its end."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.steps: list[StepRow] = []

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
        self.release.wait(30)
        self.steps.extend(steps)

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        if event["event"] == "run_completed":  # called once its line (the last) is committed
            self.release.set()


def test_a_slow_observer_misses_rows_alone_counted_and_the_store_keeps_them_all(
    fixture_workers: Path,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(observers_mod, "MAX_PENDING_ROWS", 300)
    slow, fast = Blocked(), Collector()
    # ~1 s of steps (about 1000 a second): the fast observer keeps up, the blocked one cannot
    reporter = Reporter()
    result = run_worker(
        _handle(slow=slow, fast=fast),
        {"mode": "slow", "lines": 1000, "delay": 0.001},
        store=store_path,
        reporter=reporter,
    )
    # the run was stored to its end while the slow observer was blocked
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 1000 and result.lost_rows == 0
    [(n,)] = rows(store_path, "SELECT count(*) FROM steps WHERE run_id = ?", result.run_id)
    assert n == 1000
    assert len(fast.steps) == 1000  # the other observer missed nothing
    reports = {r["name"]: r for r in result.observers}
    assert reports["fast"]["missed_steps"] == 0
    slow_report = reports["slow"]
    assert slow_report["missed_steps"] > 0 and slow_report["error"] is None
    assert slow_report["delivered_steps"] + slow_report["missed_steps"] == 1000
    assert len(slow.steps) == slow_report["delivered_steps"]
    # what it got is the newest rows, in order, without duplicates
    got = [s.line_no for s in slow.steps]
    assert got == sorted(set(got))
    assert capsys.readouterr() == ("", "")  # the library prints nothing: its reporter hears it
    told = "\n".join(reporter.warnings)
    assert told.count("observer plugin 'slow' cannot keep up") == 1
    assert f"observer plugin 'slow' missed {slow_report['missed_steps']} steps" in told
    # stored with the run and shown by runs show
    with RunStore(store_path, readonly=True) as store:
        assert store.get_run(result.run_id)["observers"] == result.observers
    assert main(["runs", "show", result.run_id, "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert f"slow: too slow, missed {slow_report['missed_steps']} steps" in out
    assert "fast:" not in out


class Failing:
    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
        self.calls += 1
        raise RuntimeError("cannot reach the dashboard")


def test_a_failing_observer_is_reported_once_by_name_and_disabled(
    fixture_workers: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = Failing(), Collector()
    reporter = Reporter()
    result = run_worker(
        _handle(bad=bad, good=good),
        {"lines": 2000},
        store=store_path,
        batch_lines=50,
        reporter=reporter,
    )
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 2000 and len(good.steps) == 2000
    assert bad.calls == 1
    assert capsys.readouterr() == ("", "")
    told = "\n".join(reporter.warnings)
    assert told.count("observer plugin 'bad' raised RuntimeError: cannot reach the dashboard") == 1
    reports = {r["name"]: r for r in result.observers}
    assert reports["bad"]["error"] == "RuntimeError: cannot reach the dashboard"
    assert reports["bad"]["delivered_steps"] == 0 and reports["bad"]["missed_steps"] == 2000
    assert main(["runs", "show", result.run_id, "--store", str(store_path)]) == 0
    assert "bad: disabled after an error: RuntimeError" in capsys.readouterr().out


def test_a_run_without_observers_has_no_feed_and_no_report(
    fixture_workers: Path, store_path: Path
) -> None:
    assert ObserverFeed.for_plugins(create_plugin_manager(), "R") is None
    result = run_worker("fixture", {"lines": 10}, store=store_path)
    assert result.observers == []
    [(stored,)] = rows(store_path, "SELECT observers_json FROM runs")
    assert stored is None


def _batch(first_line: int, n: int) -> LineBatch:
    batch = LineBatch()
    for i in range(first_line, first_line + n):
        batch.steps.append(("R", i, i, 0, i, 1.0, 0, 0, None, "{}", None))
    return batch


def test_the_feed_drops_the_oldest_waiting_batches_past_its_bound() -> None:
    entered, release = threading.Event(), threading.Event()
    calls: list[list[int]] = []

    class Slow:
        @hookimpl
        def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
            calls.append([s.line_no for s in steps])
            entered.set()
            release.wait(30)

    pm = create_plugin_manager()
    pm.register(Slow(), name="slow")
    warnings: list[str] = []
    feed = ObserverFeed.for_plugins(pm, "R", max_pending_rows=250, warn=warnings.append)
    assert feed is not None and feed.names == ["slow"]
    feed.offer(_batch(1, 100))
    assert entered.wait(10)  # the first batch is being delivered; the rest must wait
    for k in range(10):
        feed.offer(_batch(101 + 100 * k, 100))
    assert len(warnings) == 1 and "'slow' cannot keep up" in warnings[0]
    release.set()
    [report] = feed.close(timeout=10)
    # 100 delivered at once; of the 1000 that waited, the newest 200 fit the bound
    assert calls == [list(range(1, 101)), list(range(901, 1101))]  # coalesced into one call
    assert report["delivered_steps"] == 300 and report["missed_steps"] == 800
    assert "missed 800 steps and 0 episodes of run R (it was too slow)" in warnings[-1]


def test_the_end_of_a_run_does_not_wait_past_its_timeout_for_a_stuck_observer() -> None:
    release = threading.Event()

    class Stuck:
        @hookimpl
        def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
            release.wait(30)

    pm = create_plugin_manager()
    pm.register(Stuck(), name="stuck")
    feed = ObserverFeed.for_plugins(pm, "R", warn=lambda message: None)
    assert feed is not None
    feed.offer(_batch(1, 10))
    feed.offer(_batch(11, 5))
    try:
        [report] = feed.close(timeout=0.2)
        assert report["delivered_steps"] == 0 and report["missed_steps"] == 15
    finally:
        release.set()


def test_observer_wrappers_are_not_observers() -> None:
    class Wrapper:
        @hookimpl(wrapper=True)
        def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> Any:
            return (yield)

    pm = create_plugin_manager()
    pm.register(Wrapper(), name="wrapper")
    assert ObserverFeed.for_plugins(pm, "R") is None


def test_the_writer_gives_observers_the_rows_as_stored(tmp_path: Path) -> None:
    """A value SQLite cannot bind is converted (as stored); a row its table refuses (a second
    row with one line number) became a log line and is not given as a step."""
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.create_run("R", "fixture")
    committed: list[LineBatch] = []
    writer = StoreWriter(path, "R", on_commit=committed.append)
    ingest = LineIngest("R")
    huge = "1" + "0" * 400
    first = LineBatch(serial=1)
    ingest.add(
        first,
        [
            b'{"type": "step", "episode_index": 0, "step_index": 0, "reward": 1.5}',
            f'{{"type": "step", "episode_index": 0, "step_index": 1, "reward": {huge}}}'.encode(),
        ],
    )
    writer.submit(first)
    duplicate = LineBatch(serial=2)
    duplicate.steps.append(("R", 1, None, 0, 9, 2.0, 0, 0, None, "{}", None))
    writer.submit(duplicate)
    writer.close()
    assert writer.lost_rows == 0
    # (the writer may commit the two batches together: look at all it gave)
    steps = [row for batch in committed for row in batch.steps]
    assert [s[5] for s in steps] == [1.5, None]  # the huge reward is NULL in SQL
    assert all(s[4] != 9 for s in steps)  # the duplicate: an 'unstored' log line instead
    [(kind,)] = rows(path, "SELECT kind FROM log_lines WHERE line_no = 1")
    assert kind == "unstored"


def test_a_failing_commit_callback_is_reported_and_the_rows_stay_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.create_run("R", "fixture")
    reports: list[str] = []

    def broken(batch: LineBatch) -> None:
        raise ValueError("broken callback")

    writer = StoreWriter(path, "R", on_commit=broken, report=reports.append)
    writer.submit(_batch(1, 3))
    writer.submit(_batch(4, 3))
    writer.close()
    assert writer.lost_rows == 0 and writer.committed_rows == 6
    assert len(reports) == 1 and "broken callback" in reports[0]


def test_the_hooks_are_one_to_many() -> None:
    pm: pluggy.PluginManager = create_plugin_manager()
    a, b = Collector(), Collector()
    pm.register(a, name="a")
    pm.register(b, name="b")
    row = StepRow("R", 1, None, 0, 0, 1.0, 0, 0, None, "{}", "x")
    pm.hook.mosaic_telemetry_steps(run_id="R", steps=[row])
    assert a.steps == b.steps == [row]


def test_a_row_batch_is_a_read_only_sequence_of_named_rows() -> None:
    tuples = [("R", i, None, 0, i, 0.5, 0, 0, None, "{}", "a") for i in range(1, 6)]
    batch = RowBatch(tuples, StepRow)
    assert len(batch) == 5
    assert batch[0] == StepRow(*tuples[0]) and batch[0].line_no == 1
    assert batch[-1].line_no == 5
    assert [r.line_no for r in batch[1:3]] == [2, 3]
    assert isinstance(batch[1:3], RowBatch)
    assert list(batch) == [StepRow(*t) for t in tuples]
    assert [r._asdict()["agent_id"] for r in reversed(batch)] == ["a"] * 5
    assert StepRow(*tuples[2]) in batch and batch.index(StepRow(*tuples[2])) == 2
    assert repr(batch) == "<RowBatch of 5 rows>"
    with pytest.raises(IndexError):
        batch[5]
    with pytest.raises(TypeError):
        batch[0] = batch[1]  # type: ignore[index]
