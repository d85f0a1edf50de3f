"""The driver's collector records remote trial attempts with the runner's own recorder: the
messages a trial sends (see :mod:`mosaic_sdk.sweeps.collector`) become an ordinary run, and the
plugins hear of it as of ``mosaic run`` (observers, ``mosaic_telemetry_event``), a lost
attempt's synthesised event included. No Ray needed: the messages are made here."""

from __future__ import annotations

import io
import sqlite3
import threading
from pathlib import Path
from typing import Any

from mosaic_sdk.runner.observers import EpisodeRow, StepRow
from mosaic_sdk.runner.store import RunStore

from mosaic_sdk import hookimpl
from mosaic_sdk.plugins import create_plugin_manager
from mosaic_sdk.sweeps.collector import Collector
from mosaic_sdk.sweeps.spec import Metric
from mosaic_sdk.sweeps.store import SweepStore
from mosaic_sdk.telemetry.emitter import TelemetryEmitter


class Seen:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: dict[str, list[StepRow]] = {}
        self.episodes: dict[str, list[EpisodeRow]] = {}
        self.events: dict[str, list[str]] = {}

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
        with self.lock:
            self.steps.setdefault(run_id, []).extend(steps)

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list[EpisodeRow]) -> None:
        with self.lock:
            self.episodes.setdefault(run_id, []).extend(episodes)

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.setdefault(run_id, []).append(f"{worker}:{event['event']}")


def _lines(run_id: str, episodes: int, steps: int, complete: bool) -> list[bytes]:
    out = io.StringIO()
    emitter = TelemetryEmitter(run_id, out)
    emitter.run_started(worker_type="fixture")
    for e in range(episodes):
        for s in range(steps):
            emitter.step(e, s, 1.0, terminated=s == steps - 1)
        emitter.episode(e, float(steps), steps, terminated=True)
    if complete:
        emitter.run_completed(
            episodes=episodes, total_reward=float(episodes * steps), duration_seconds=0.1
        )
    emitter.close()
    return [line.encode() for line in out.getvalue().splitlines()]


def _stored(store: Path, table: str, run_id: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store)
    try:
        sql = f"SELECT * FROM {table} WHERE run_id = ? ORDER BY line_no"
        return conn.execute(sql, (run_id,)).fetchall()
    finally:
        conn.close()


def test_observers_and_event_hooks_hear_of_every_collected_attempt(tmp_path: Path) -> None:
    pm = create_plugin_manager()
    seen = Seen()
    pm.register(seen, name="seen")
    store = tmp_path / "s.sqlite"
    coll = Collector(store, "fixture", "SW", Metric(), report=lambda _m: None, pm=pm)
    SweepStore(coll.runs).create_sweep("SW", "fixture", "ray", {}, Metric())
    info = {"params": {}, "config": {}, "argv": [], "run_dir": str(tmp_path), "node": "n"}
    done, lost = "RUNDONE", "RUNLOST"
    coll.handle([("start", r, {**info, "trial_key": f"t-{r}"}) for r in (done, lost)])
    done_lines = _lines(done, episodes=3, steps=50, complete=True)
    lost_lines = _lines(lost, episodes=2, steps=20, complete=False)
    for i in range(0, len(done_lines), 40):  # interleaved, in batches as an inbox delivers
        coll.handle(
            [("out", done, done_lines[i : i + 40], False), ("out", lost, lost_lines[:0], False)]
        )
    coll.handle([("out", lost, lost_lines, False), ("err", lost, [b"a warning"], False)])
    coll.handle([("end", done, {"exit_code": 0})])
    coll.lost(lost, "its node was lost")
    coll.close()

    with RunStore(store, readonly=True) as runs:
        assert runs.get_run(done)["status"] == "completed"
        assert runs.get_run(lost)["status"] == "failed"
        for run_id in (done, lost):
            steps = _stored(store, "steps", run_id)
            episodes = _stored(store, "episodes", run_id)
            assert steps and episodes
            assert [tuple(r) for r in seen.steps[run_id]] == steps
            assert [tuple(r) for r in seen.episodes[run_id]] == episodes
            stored_events = [f"fixture:{e['event']}" for e in runs.events(run_id)]
            assert seen.events[run_id] == stored_events
            [report] = runs.get_run(run_id)["observers"]
            assert report["delivered_steps"] == len(steps)
            assert report["delivered_episodes"] == len(episodes)
            assert report["missed_steps"] == report["missed_episodes"] == 0
    assert seen.events[done] == ["fixture:run_started", "fixture:run_completed"]
    # the event the driver made up for the lost attempt reached the hook as well
    assert seen.events[lost] == ["fixture:run_started", "fixture:run_failed"]


def test_without_a_plugin_manager_the_collector_stores_alone(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    coll = Collector(store, "fixture", "SW", Metric(), report=lambda _m: None)
    SweepStore(coll.runs).create_sweep("SW", "fixture", "ray", {}, Metric())
    info = {"params": {}, "config": {}, "argv": [], "run_dir": str(tmp_path), "node": "n"}
    coll.handle([("start", "R1", {**info, "trial_key": "t"})])
    coll.handle([("out", "R1", _lines("R1", 2, 10, complete=True), False)])
    coll.handle([("end", "R1", {"exit_code": 0})])
    coll.close()
    with RunStore(store, readonly=True) as runs:
        run = runs.get_run("R1")
        assert run["status"] == "completed" and run["observers"] == []
        assert run["counts"]["steps"] == 20 and run["counts"]["episodes"] == 2
