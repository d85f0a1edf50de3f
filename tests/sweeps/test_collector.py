"""The driver's collector records remote trial attempts with the runner's own recorder: the
messages a trial sends (see :mod:`mosaic_sdk.sweeps.collector`) become an ordinary run, and the
plugins hear of it as of ``mosaic run`` (observers, ``mosaic_telemetry_event``), a lost
attempt's synthesised event included. No Ray needed: the messages are made here."""

from __future__ import annotations

import io
from pathlib import Path

from mosaic_sdk.plugins import create_plugin_manager
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.collector import Collector
from mosaic_sdk.sweeps.spec import Metric
from mosaic_sdk.sweeps.store import SweepStore
from mosaic_sdk.telemetry.emitter import TelemetryEmitter
from tests.sweeps.conftest import Seen, stored_rows


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
            steps = stored_rows(store, "steps", run_id)
            episodes = stored_rows(store, "episodes", run_id)
            assert steps and episodes
            assert [tuple(r) for r in seen.steps[run_id]] == steps
            assert [tuple(r) for r in seen.episodes[run_id]] == episodes
            stored_events = [f"fixture:{e['event']}" for e in runs.events(run_id)]
            assert seen.named[run_id] == stored_events
            [report] = runs.get_run(run_id)["observers"]
            assert report["delivered_steps"] == len(steps)
            assert report["delivered_episodes"] == len(episodes)
            assert report["missed_steps"] == report["missed_episodes"] == 0
    assert seen.named[done] == ["fixture:run_started", "fixture:run_completed"]
    # the event the driver made up for the lost attempt reached the hook as well
    assert seen.named[lost] == ["fixture:run_started", "fixture:run_failed"]


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
