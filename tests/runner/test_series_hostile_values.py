"""Series values the store used to keep silently wrong (issue 45, item 14): ``-0.0`` came back
``+0.0``; a dotted key and a nested key of the same path became one series; steps past 2**53
(which float64 chart columns round), negative steps and time stamps, and an ``agent_id`` that
is no string (stored as its Python repr) were taken as they came. The ingest now holds any
worker's lines to the emitter's rules, and says so once a run."""

from __future__ import annotations

import io
import json
import math
import sqlite3
import time
from pathlib import Path

import pytest

from mosaic_sdk.runner.recording.ingest import LineIngest
from mosaic_sdk.runner.reporting import Reporter, use_reporter
from mosaic_sdk.runner.storage.export import export_run
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter
from mosaic_sdk.telemetry import TelemetryEmitter
from mosaic_sdk.telemetry.emitter import MAX_STEP

TS = 1_750_000_000_000_000_000


def _metrics(step: object, values: object, ts: object = TS, **extra: object) -> str:
    payload: dict[str, object] = {"step": step, "values": values, **extra}
    return json.dumps(
        {"type": "lifecycle", "event": "metrics", "payload": payload, "ts_unix_ns": ts}
    )


def _event(name: str, payload: object, **extra: object) -> str:
    line = {"type": "lifecycle", "event": name, "payload": payload, "ts_unix_ns": TS, **extra}
    return json.dumps(line)


def _store(path: Path, lines: list[str]) -> list[str]:
    """Store ``lines`` as run R's stdout; returns the warnings the ingest gave."""
    with RunStore(path) as store:
        store.create_run("R", "w")
    told: list[str] = []
    writer = StoreWriter(path, "R")
    batch = LineBatch(1)
    with use_reporter(Reporter(told.append)):
        LineIngest("R").add(batch, [line.encode() for line in lines])
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    return told


def _series(path: Path) -> dict[tuple[str, str | None], list[tuple[int, float]]]:
    with RunStore(path, readonly=True) as store:
        out = {}
        for info in store.series("R"):
            got = store.series_columns("R", info.name, info.agent_id)
            out[info.name, info.agent_id] = list(
                zip(got.steps.tolist(), got.values.tolist(), strict=True)
            )
        return out


def _refused(path: Path) -> int:
    with RunStore(path, readonly=True) as store:
        return store.series_counts("R")["refused"]


def _sign(value: float) -> float:
    return math.copysign(1.0, value)


def test_negative_zero_keeps_its_sign_in_every_read(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    lines = [_metrics(s, {"g": -0.0 if s % 2 else 0.0, "h": -0.0}) for s in range(4000)]
    _store(path, [*lines, _event("train", {"step": 7, "loss": -0.0})])
    with RunStore(path, readonly=True) as store:
        got = store.series_columns("R", "g")
        assert [_sign(v) for v in got.values[:4].tolist()] == [1.0, -1.0, 1.0, -1.0]
        assert all(v == 0 for v in got.values.tolist())
        assert [_sign(v) for v in store.series_points("R", "g").values[:2]] == [1.0, -1.0]
        infos = {i.name: i.last_value for i in store.series("R")}
        assert _sign(infos["g"]) == -1.0 and _sign(infos["h"]) == -1.0  # step 3999: -0.0
        assert _sign(infos["train/loss"]) == -1.0
        # a downsampled read scanning SQLite (the series' blocks turned off) reads by key
        store.conn.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE series SET summarised = 0")
    with RunStore(path, readonly=True) as store:
        thin = store.series_columns("R", "h", buckets=10)
        assert thin.downsampled and {_sign(v) for v in thin.values.tolist()} == {-1.0}
        out = io.BytesIO()
        export_run(store, "R", what="metrics", fmt="jsonl", output=out, metrics=["g"])
    rows = [json.loads(line) for line in out.getvalue().decode().splitlines()]
    assert [_sign(r["value"]) for r in rows[:2]] == [1.0, -1.0]
    assert '"value": -0.0' in out.getvalue().decode()


def test_a_dotted_key_and_a_nested_key_of_one_name_are_refused_and_said(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    told = _store(
        path,
        [
            _metrics(1, {"a.b": 1.0, "a": {"b": 2.0, "c": 3.0}, "d": 4.0}),
            _metrics(2, {"a.b": 1.0, "a": {"b": 2.0}}),
            _event("train", {"step": 5, "x.y": 1, "x": {"y": 2}, "z": 3, "note": "text"}),
        ],
    )
    assert set(_series(path)) == {("a.c", None), ("d", None), ("train/z", None)}
    assert _refused(path) == 6  # both values of a.b, twice; both of train/x.y
    [said] = told
    assert said.startswith("run R line 1: the name 'a.b' comes twice in one line")
    assert "refused and counted" in said


@pytest.mark.parametrize(
    ("step", "kept"),
    [(MAX_STEP, True), (MAX_STEP + 1, False), (2**63 - 1, False), (-1, False), (1e300, False)],
)
def test_steps_outside_0_to_2_53_are_refused_as_the_emitter_refuses_them(
    tmp_path: Path, step: float, kept: bool
) -> None:
    path = tmp_path / "runs.sqlite"
    told = _store(path, [_metrics(step, {"loss": 0.5}), _event("train", {"step": step, "x": 1})])
    if kept:
        assert _series(path) == {("loss", None): [(step, 0.5)], ("train/x", None): [(step, 1.0)]}
        assert told == [] and _refused(path) == 0
        return
    assert _series(path) == {} and _refused(path) == 2
    [said] = told
    assert f"line 1: step {int(step)} is outside 0 .. 2**53" in said


def test_the_emitter_refuses_the_same_steps(tmp_path: Path) -> None:
    out = io.StringIO()
    with TelemetryEmitter(run_id="R", stream=out) as emitter:
        emitter.metrics({"loss": 1.0}, step=MAX_STEP)
        for step in (MAX_STEP + 1, -1):
            with pytest.raises(ValueError, match=r"a step >= 0 and <= 2\*\*53"):
                emitter.metrics({"loss": 1.0}, step=step)
    assert json.loads(out.getvalue().splitlines()[-1])["payload"]["step"] == MAX_STEP


@pytest.mark.parametrize("agent", [5, {"id": 1}, "", True, ["a"]])
def test_an_agent_id_that_is_no_string_refuses_the_lines_values(
    tmp_path: Path, agent: object
) -> None:
    path = tmp_path / "runs.sqlite"
    told = _store(
        path,
        [
            _metrics(1, {"loss": 0.5}, agent_id=agent),
            _event("train", {"step": 1, "x": 1}, agent_id=agent),
            _metrics(2, {"loss": 0.25}, agent_id="blue"),
        ],
    )
    assert _series(path) == {("loss", "blue"): [(2, 0.25)]}  # no series of "5" or "{'id': 1}"
    assert _refused(path) == 2
    [said] = told
    assert f"line 1: agent_id {agent!r} is no non-empty string" in said


def test_a_negative_time_stamp_is_no_time_stamp(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    before = time.time_ns()
    _store(path, [_metrics(1, {"loss": 0.5}, ts=-5_000), _metrics(2, {"loss": 0.4}, ts=TS)])
    with RunStore(path, readonly=True) as store:
        walls = store.series_columns("R", "loss").wall_ns.tolist()
    assert walls[0] >= before and walls[1] == TS  # the time it was read, as with none
