"""TensorBoard as a peer: a run's series written as event files (``runs export --format
tensorboard`` and the live observer of ``mosaic run --tensorboard``) read back by
TensorBoard's own reader with every point equal to the store's, in exact doubles when asked
(``--tensorboard-doubles``; the default float32 scalars: test_tensorboard_readers.py)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from mosaic_sdk import hookimpl
from mosaic_sdk.cli import main
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.runner.recording.tensorboard import (
    ENV_DIR,
    ENV_DOUBLES,
    TensorBoardObserver,
    run_dir,
)
from mosaic_sdk.runner.reporting import Reporter, use_reporter
from mosaic_sdk.runner.storage.records import SeriesPoint
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervisor import run_worker

pytest.importorskip("tensorboardX")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
tensor_util = pytest.importorskip("tensorboard.util.tensor_util")


def read_back(directory: Path) -> dict[str, list[tuple[int, float, float]]]:
    """``{tag: [(step, wall_time, value)]}`` of the event files in ``directory``, read by
    TensorBoard's EventAccumulator (every event kept)."""
    acc = event_accumulator.EventAccumulator(str(directory), size_guidance={"tensors": 0})
    acc.Reload()
    return {
        tag: [
            (e.step, e.wall_time, tensor_util.make_ndarray(e.tensor_proto).item())
            for e in acc.Tensors(tag)
        ]
        for tag in acc.Tags()["tensors"]
    }


def stored(store: Path, run_id: str) -> dict[str | None, dict[str, list[tuple[int, float, float]]]]:
    out: dict[str | None, dict[str, list[tuple[int, float, float]]]] = {}
    with RunStore(store, readonly=True) as rs:
        for info in rs.series(run_id):
            p = rs.series_points(run_id, info.name, info.agent_id)
            out.setdefault(info.agent_id, {})[info.name] = [
                (s, w / 1e9, v) for s, v, w in zip(p.steps, p.values, p.wall_ns, strict=True)
            ]
    return out


def assert_same(
    got: dict[str, list[tuple[int, float, float]]], want: dict[str, list[tuple[int, float, float]]]
) -> None:
    assert sorted(got) == sorted(want)
    for tag, points in want.items():
        read = sorted(got[tag], key=lambda p: (p[0], p[1]))
        assert len(read) == len(points), tag
        for (s1, w1, v1), (s2, w2, v2) in zip(read, points, strict=True):
            assert (s1, w1) == (s2, w2), tag
            assert (math.isnan(v1) and math.isnan(v2)) or v1 == v2, (tag, v1, v2)


def _metrics(step: int, values: dict[str, float], ts: int, agent: str | None = None) -> str:
    payload: dict[str, object] = {"step": step, "values": values}
    if agent is not None:
        payload["agent_id"] = agent
    return json.dumps(
        {"type": "lifecycle", "event": "metrics", "payload": payload, "ts_unix_ns": ts}
    )


@pytest.fixture
def echo_worker(fixture_workers: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MOSAIC_PLUGINS", os.environ["MOSAIC_PLUGINS"] + ",echo=store_workers:Echo")
    return "echo"


def _lines(tmp_path: Path) -> Path:
    lines = []
    for i in range(400):
        lines.append(json.dumps({"type": "step", "episode_index": 0, "step_index": i}))
        if i % 10 == 0:
            ts = 1_750_000_000_123_456_789 + i * 1_000_003
            lines.append(
                _metrics(i, {"losses/value": 1 / (i + 3), "charts/lr": 3e-4 * (1 - i / 400)}, ts)
            )
            lines.append(_metrics(i, {"losses/value": -i / 7, "odd": math.nan}, ts + 1, "p1"))
    lines.append(_metrics(400, {"losses/value": math.inf}, 1_750_000_001_000_000_000))
    lines.append(
        json.dumps(
            {
                "type": "lifecycle",
                "event": "train_metrics",
                "payload": {"global_step": 5, "loss": 0.25},
                "ts_unix_ns": 1_750_000_002_000_000_000,
            }
        )
    )
    lines.append(json.dumps({"type": "lifecycle", "event": "run_completed", "payload": {}}))
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(line + "\n" for line in lines))
    return source


def test_export_tensorboard_is_read_back_with_every_point_equal(
    echo_worker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    result = run_worker(echo_worker, {"lines_file": str(_lines(tmp_path))}, store=store)
    assert result.status == "completed", result.error
    out = tmp_path / "tb"
    args = ["runs", "export", result.run_id, "--what", "metrics", "--format", "tensorboard"]
    assert main([*args, "--tensorboard-doubles", "-o", str(out), "--store", str(store)]) == 0
    assert f"wrote {40 * 4 + 2} points" in capsys.readouterr().out
    want = stored(store, result.run_id)
    assert set(want) == {None, "p1"}
    assert_same(read_back(run_dir(out, result.run_id, None)), want[None])
    assert_same(read_back(run_dir(out, result.run_id, "p1")), want["p1"])
    assert want[None]["losses/value"][-1][2] == math.inf
    # without --what metrics, or to standard output, it is refused in one line
    assert (
        main(
            [
                "runs",
                "export",
                result.run_id,
                "--format",
                "tensorboard",
                "-o",
                str(out),
                "--store",
                str(store),
            ]
        )
        == 2
    )
    assert "use it with --what metrics" in capsys.readouterr().err


def test_the_tensorboard_observer_writes_the_series_while_the_run_goes_on(
    echo_worker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "live"
    monkeypatch.setenv(ENV_DIR, str(out))
    monkeypatch.setenv(ENV_DOUBLES, "1")
    store = tmp_path / "runs.sqlite"
    result = run_worker(echo_worker, {"lines_file": str(_lines(tmp_path))}, store=store)
    assert result.status == "completed", result.error
    [report] = [r for r in result.observers if r["name"] == "builtin:tensorboard"]
    assert report["delivered_points"] == 40 * 4 + 2 and report["missed_points"] == 0
    want = stored(store, result.run_id)
    assert_same(read_back(run_dir(out, result.run_id, None)), want[None])
    assert_same(read_back(run_dir(out, result.run_id, "p1")), want["p1"])


class SeriesSeen:
    def __init__(self) -> None:
        self.points: list[SeriesPoint] = []

    @hookimpl
    def mosaic_telemetry_series(self, run_id: str, points: list[SeriesPoint]) -> None:
        self.points.extend(points)


def test_hook_mosaic_telemetry_series_sees_every_point_named(
    echo_worker: str, tmp_path: Path
) -> None:
    seen = SeriesSeen()
    registry = discover_workers()
    registry.pm.register(seen, name="seen")
    store = tmp_path / "runs.sqlite"
    result = run_worker(
        registry.get(echo_worker), {"lines_file": str(_lines(tmp_path))}, store=store
    )
    assert result.status == "completed", result.error
    assert all(isinstance(p, SeriesPoint) and p.run_id == result.run_id for p in seen.points)
    got: dict[str | None, dict[str, list[tuple[int, float, float]]]] = {}
    for p in seen.points:
        got.setdefault(p.agent_id, {}).setdefault(p.name, []).append(
            (p.step, p.wall_ns / 1e9, p.value)
        )
    want = stored(store, result.run_id)
    assert set(got) == set(want)
    for agent in want:
        assert_same(got[agent], want[agent])
    [report] = [r for r in result.observers if r["name"] == "seen"]
    assert report["delivered_points"] == len(seen.points) == 40 * 4 + 2


def test_the_observer_s_points_are_readable_before_the_run_ends(tmp_path: Path) -> None:
    """Each delivery is on disk when the hook returns (TensorBoard follows a live run); the
    run's files are closed at its cleanup, and points that come after it are still written."""
    observer = TensorBoardObserver(tmp_path, doubles=True)
    first = [SeriesPoint("R", "loss", None, s, 1 / (s + 1), 10**18 + s) for s in range(3)]
    observer.mosaic_telemetry_series(run_id="R", points=first)
    want = {"loss": [(p.step, p.wall_ns / 1e9, p.value) for p in first]}
    assert_same(read_back(run_dir(tmp_path, "R", None)), want)
    observer.mosaic_run_cleanup(run_id="R")
    late = [SeriesPoint("R", "loss", None, 7, 0.5, 10**18 + 7)]
    observer.mosaic_telemetry_series(run_id="R", points=late)
    want["loss"].append((7, (10**18 + 7) / 1e9, 0.5))
    assert_same(read_back(run_dir(tmp_path, "R", None)), want)


def _points(run_id: str, agent: str | None, n: int = 3) -> list[SeriesPoint]:
    return [SeriesPoint(run_id, "loss", agent, s, s / 2, 10**18 + s) for s in range(n)]


def _want(points: list[SeriesPoint]) -> dict[str, list[tuple[int, float, float]]]:
    return {"loss": [(p.step, p.wall_ns / 1e9, p.value) for p in points]}


def test_any_agent_id_makes_a_directory_of_its_own(tmp_path: Path) -> None:
    """An id too long for a file name (over 255 bytes quoted), two that differ only past the
    cut, ``..``: each agent's files are written apart, under the run's directory."""
    agents = ["a" * 300, "a" * 299 + "b", "é/" * 100, "..", "p1", None]
    observer = TensorBoardObserver(tmp_path, doubles=True)
    sent = {agent: _points("R", agent) for agent in agents}
    for points in sent.values():
        observer.mosaic_telemetry_series(run_id="R", points=points)
    observer.mosaic_run_cleanup(run_id="R")
    dirs = {agent: run_dir(tmp_path, "R", agent) for agent in agents}
    assert len(set(dirs.values())) == len(agents)
    for agent, path in dirs.items():
        assert path.parent == tmp_path / "R" or (agent is None and path == tmp_path / "R")
        assert len(path.name.encode()) <= 255  # what a file system takes
        assert_same(read_back(path), _want(sent[agent]))  # its own files, not its agents'


def test_an_agent_whose_files_cannot_be_made_does_not_stop_the_others(tmp_path: Path) -> None:
    blocked = run_dir(tmp_path, "R", "blocked")
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where its directory would go")
    observer = TensorBoardObserver(tmp_path, doubles=True)
    with use_reporter(Reporter()) as reporter:
        for agent in ("p1", "blocked", "p2", "blocked"):
            observer.mosaic_telemetry_series(run_id="R", points=_points("R", agent))
    observer.mosaic_run_cleanup(run_id="R")
    for agent in ("p1", "p2"):
        assert_same(read_back(run_dir(tmp_path, "R", agent)), _want(_points("R", agent)))
    [warning] = reporter.warnings  # once, not once per delivery
    assert "run R" in warning and "agent 'blocked'" in warning and "File exists" in warning


def test_a_run_whose_agent_id_is_300_characters_writes_every_point(
    echo_worker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "live"
    monkeypatch.setenv(ENV_DIR, str(out))
    monkeypatch.setenv(ENV_DOUBLES, "1")
    long_agent = "agent-" + "x" * 294
    lines = [
        _metrics(s, {"loss": s / 3}, 1_750_000_000_000_000_000 + s, long_agent) for s in range(5)
    ]
    lines += [_metrics(s, {"loss": -s}, 1_750_000_000_000_000_000 + s, "p1") for s in range(5)]
    lines.append(json.dumps({"type": "lifecycle", "event": "run_completed", "payload": {}}))
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(line + "\n" for line in lines))
    store = tmp_path / "runs.sqlite"
    result = run_worker(echo_worker, {"lines_file": str(source)}, store=store)
    assert result.status == "completed", result.error
    [report] = [r for r in result.observers if r["name"] == "builtin:tensorboard"]
    assert report["error"] is None and report["missed_points"] == 0
    assert report["delivered_points"] == 10
    want = stored(store, result.run_id)
    for agent in (long_agent, "p1"):
        assert_same(read_back(run_dir(out, result.run_id, agent)), want[agent])


def test_tensorboard_naming_a_file_is_refused_before_the_run(
    echo_worker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    store = tmp_path / "runs.sqlite"
    for given in (a_file, a_file / "tb"):
        code = main(["run", echo_worker, "--tensorboard", str(given), "--store", str(store)])
        assert code == 2
        err = capsys.readouterr().err
        assert f"--tensorboard {given}: {a_file} is a file, not a directory" in err, err
    assert not store.exists() and a_file.read_text() == "mine"  # nothing ran
