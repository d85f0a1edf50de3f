"""The Ray engine's trials compute their objective from the lines on their node
(:class:`~mosaic_sdk.sweeps.objective.StreamObjective`); the driver stores the same lines and
ranks by :func:`~mosaic_sdk.sweeps.objective.metric_of_run`. Both must give the same number for
every metric, reduce, mode and agent. No Ray needed: the lines are made here and stored
through the collector."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.collector import Collector
from mosaic_sdk.sweeps.objective import StreamObjective, metric_of_run
from mosaic_sdk.sweeps.spec import REDUCES, Metric
from mosaic_sdk.sweeps.store import SweepStore
from mosaic_sdk.telemetry.emitter import TelemetryEmitter


def _lines(run_id: str) -> list[bytes]:
    out = io.StringIO()
    emitter = TelemetryEmitter(run_id, out)
    emitter.run_started(worker_type="fixture")
    for e in range(7):
        for agent, sign in (("player_0", 1.0), ("player_1", -1.0)):
            emitter.episode(e, sign * (e % 3 + 0.5), 10 + e, terminated=True, agent_id=agent)
        # two agents' losses, written out of step order, one non-finite value
        emitter.metrics({"loss": 1.0 / (e + 1), "lr": 0.1}, step=100 - 10 * e, agent_id="a")
        emitter.metrics({"loss": float("nan") if e == 3 else 2.0 - e}, step=5 * e, agent_id="b")
        emitter.metrics({"loss": 0.5 * e}, step=7 * e)
    emitter.checkpoint_saved(checkpoint_path="/nowhere/ckpt-1.json", step=70)
    emitter.run_completed(episodes=7, total_reward=0.0, duration_seconds=0.1)
    emitter.close()
    return [line.encode() for line in out.getvalue().splitlines()]


METRICS = [
    Metric(name, 3, mode, agent, reduce)
    for name, agents in (
        ("return", (None, "player_0", "player_1")),
        ("steps", (None, "player_1")),
        ("loss", (None, "a", "b")),
    )
    for agent in agents
    for reduce in REDUCES
    for mode in ("max", "min")
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    tmp = tmp_path_factory.mktemp("stream")
    store = tmp / "s.sqlite"
    coll = Collector(store, "fixture", "SW", Metric(), report=lambda _m: None)
    SweepStore(coll.runs).create_sweep("SW", "fixture", "ray", {}, Metric())
    info = {"params": {}, "config": {}, "argv": [], "run_dir": str(tmp), "node": "n"}
    coll.handle([("start", "RUN", {**info, "trial_key": "t"})])
    lines = _lines("RUN")
    for i in range(0, len(lines), 5):
        coll.handle([("out", "RUN", lines[i : i + 5], False)])
    coll.handle([("end", "RUN", {"exit_code": 0})])
    coll.close()
    return store, lines


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: json.dumps(m.to_dict()))
def test_the_stream_gives_the_stored_runs_metric(
    stored: tuple[Path, list[bytes]], metric: Metric
) -> None:
    store, lines = stored
    stream = StreamObjective([metric])
    for i in range(0, len(lines), 3):  # in pieces, as a trial's reader gets them
        stream.add(lines[i : i + 3])
    with RunStore(store, readonly=True) as runs:
        expected = metric_of_run(runs, "RUN", metric)
    got = stream.value(metric)
    assert expected is not None and got is not None
    assert got[0] == pytest.approx(expected)


def test_the_stream_says_its_last_step_and_checkpoint_and_nothing_before_a_value() -> None:
    lines = _lines("RUN")
    stream = StreamObjective([Metric("loss", agent="a")])
    stream.add(lines[:2])  # run_started and the first episode: no loss yet
    assert stream.value(Metric("loss", agent="a")) is None
    stream.add(lines[2:])
    value = stream.value(Metric("loss", agent="a", reduce="mean"))
    assert value is not None and value[1] == 100  # the largest step of a's losses
    assert stream.value(Metric("return", agent="player_0"))[1] == 7  # type: ignore[index]
    assert stream.checkpoint == "/nowhere/ckpt-1.json"
    assert stream.episodes == 14
