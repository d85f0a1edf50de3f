"""mosaic watch and multi-agent runs: per-agent curves, several FastLane streams (one per
agent, ``{run_id}-w{n}``), and a policy evaluation's batches as they arrive."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from mosaic_sdk.fastlane import FastLaneConfig, FastLaneWriter, agent_stream_id
from mosaic_sdk.watch import data
from tests.watch.conftest import LOOPBACK_HOST
from tests.watch.storefill import FilledRun
from tests.watch.test_stream import next_frame


def multi_agent_run(store: Path, run_id: str = "MA", run_dir: Path | None = None) -> FilledRun:
    run = FilledRun(store, run_id, config={"env_id": "pong"}, run_dir=run_dir)
    for i in range(4):
        run.add_step(1.0, "red")
        run.add_step(-1.0, "blue")
        run.add_episode(float(i), 10, "red", episode_index=i)  # game i: an episode per agent
        run.add_episode(float(-i), 5, "blue", episode_index=i)
    return run


def test_the_run_lists_its_agents_and_each_agent_has_its_curve(
    client: TestClient, store: Path
) -> None:
    multi_agent_run(store)
    run = client.get("/api/runs/MA").json()
    agents = {a["label"]: a for a in run["agents"]}
    assert set(agents) == {"red", "blue"}
    assert agents["red"]["steps"] == 4 and agents["red"]["episodes"] == 4
    assert agents["blue"]["mean_return"] == pytest.approx(-1.5)
    red = client.get("/api/runs/MA/curve?agent=red&smooth=1").json()
    assert red["agent"] == "red" and red["episodes"] == 4
    assert red["raw"] == [[10.0, 0.0], [20.0, 1.0], [30.0, 2.0], [40.0, 3.0]]
    blue = client.get("/api/runs/MA/curve?agent=blue&smooth=1").json()
    assert [p[1] for p in blue["raw"]] == [0.0, -1.0, -2.0, -3.0]
    assert [p[0] for p in blue["raw"]] == [5.0, 10.0, 15.0, 20.0]  # blue's own env steps
    whole = client.get("/api/runs/MA/curve").json()
    assert whole["episodes"] == 8 and "agent" not in whole
    # the cache keeps the agents apart: an unchanged agent says so
    again = client.get(f"/api/runs/MA/curve?agent=red&known={red['read']}").json()
    assert again["unchanged"] is True
    assert client.get("/api/runs/MA/curve?agent=nobody").json()["episodes"] == 0


def test_rows_without_an_agent_id_are_their_own_group(client: TestClient, store: Path) -> None:
    run = multi_agent_run(store, "MIX")
    run.add_episode(9.0, 1)
    labels = [a["label"] for a in client.get("/api/runs/MIX").json()["agents"]]
    assert labels[-1] == "(no agent_id)"
    only = client.get("/api/runs/MIX/curve?agentless=1&smooth=1").json()
    assert [p[1] for p in only["raw"]] == [9.0]


def test_a_single_agent_run_has_no_agent_list(client: TestClient, store: Path) -> None:
    run = FilledRun(store, "ONE")
    run.add_episode(1.0, 3)
    assert client.get("/api/runs/ONE").json()["agents"] == []


@pytest.fixture
def worker_streams() -> Iterator[tuple[str, list[FastLaneWriter]]]:
    run_id = f"watch-ma-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    writers: list[FastLaneWriter] = []
    try:
        yield run_id, writers
    finally:
        for w in writers:
            w.close()
            w.unlink()


def test_several_fastlane_streams_are_listed_and_each_can_be_watched(
    client: TestClient, store: Path, worker_streams: tuple[str, list[FastLaneWriter]]
) -> None:
    run_id, writers = worker_streams
    FilledRun(store, run_id)
    assert client.get(f"/api/runs/{run_id}").json()["streams"] == [
        {"stream": run_id, "label": "run", "worker": None}
    ]
    for n in (1, 2):
        w = FastLaneWriter.create(agent_stream_id(run_id, n - 1), FastLaneConfig(width=4, height=2))
        w.publish(np.full((2, 4, 3), 100 * n, np.uint8))
        writers.append(w)
    streams = client.get(f"/api/runs/{run_id}").json()["streams"]
    assert [(s["stream"], s["label"]) for s in streams] == [
        (f"{run_id}-w1", "agent stream 1"),
        (f"{run_id}-w2", "agent stream 2"),
    ]
    for n in (1, 2):
        url = f"/ws/runs/{run_id}/frames?stream={run_id}-w{n}"
        with client.websocket_connect(url, headers=LOOPBACK_HOST) as ws:
            header, image = next_frame(ws)
        assert (header["width"], header["height"]) == (4, 2)
        assert abs(int(image.mean()) - 100 * n) <= 3  # that worker's frame (JPEG)


def test_a_stream_of_another_run_is_refused(client: TestClient, store: Path) -> None:
    FilledRun(store, "R1")
    for other in ("R2", "R1-w1x", "R10-w1", "R1-w0", "R1_W1", "../R1"):
        with client.websocket_connect(
            f"/ws/runs/R1/frames?stream={other}", headers=LOOPBACK_HOST
        ) as ws:
            note = json.loads(ws.receive_text())
        assert note["state"] == "refused" and "not one of run R1" in note["message"]
    assert data.stream_of_run("R1", "R1-w3") == "R1-w3"
    assert data.stream_of_run("R1", None) == "R1"


def _eval_run(store: Path, tmp_path: Path) -> tuple[FilledRun, Path]:
    run_dir = tmp_path / "eval-run"
    run_dir.mkdir()
    run = FilledRun(store, "EVAL", worker="cleanrl", run_dir=run_dir)
    run.add_event("run_started", {})
    return run, run_dir


def _batch(run: FilledRun, run_dir: Path, index: int, returns: list[float], so_far: list[float]):
    so_far.extend(returns)
    run.add_event(
        "policy_eval_batch",
        {
            "batch": index,
            "episodes": len(so_far),
            "batch_episodes": len(returns),
            "batch_avg_return": sum(returns) / len(returns),
            "batch_min_return": min(returns),
            "batch_max_return": max(returns),
            "avg_return": sum(so_far) / len(so_far),
            "min_return": min(so_far),
            "max_return": max(so_far),
        },
    )
    summary = {
        "schema": "mosaic.cleanrl.eval_summary/1",
        "status": "running",
        "batch_count": index,
        "episodes": len(so_far),
        "episodes_planned": 6,
        "avg_return": sum(so_far) / len(so_far),
        "min_return": min(so_far),
        "max_return": max(so_far),
        "last_batch": {"index": index, "episodes": len(returns)},
    }
    (run_dir / "eval_summary.json").write_text(json.dumps(summary))


def test_evaluation_batches_arrive_one_by_one(
    client: TestClient, store: Path, tmp_path: Path
) -> None:
    run, run_dir = _eval_run(store, tmp_path)
    assert client.get("/api/runs/EVAL").json()["evaluation"] is False
    so_far: list[float] = []
    _batch(run, run_dir, 1, [1.0, 3.0], so_far)
    assert client.get("/api/runs/EVAL").json()["evaluation"] is True
    first = client.get("/api/runs/EVAL/eval").json()
    assert [(b["batch"], b["avg"], b["min"], b["max"]) for b in first["batches"]] == [
        (1, 2.0, 1.0, 3.0)
    ]
    assert first["summary"]["episodes"] == 2
    after = first["batches"][-1]["line_no"]
    _batch(run, run_dir, 2, [5.0, 9.0], so_far)
    later = client.get(f"/api/runs/EVAL/eval?after={after}").json()
    assert [(b["batch"], b["avg"], b["min"], b["max"]) for b in later["batches"]] == [
        (2, 7.0, 5.0, 9.0)
    ]
    assert later["summary"]["max_return"] == 9.0 and later["summary"]["batch_count"] == 2


def test_a_summary_file_alone_marks_an_evaluation_and_a_foreign_file_is_ignored(
    client: TestClient, store: Path, tmp_path: Path
) -> None:
    _run, run_dir = _eval_run(store, tmp_path)
    (run_dir / "eval_summary.json").write_text(json.dumps({"schema": "someone.else/1"}))
    assert client.get("/api/runs/EVAL").json()["evaluation"] is True
    assert client.get("/api/runs/EVAL/eval").json() == {
        "run_id": "EVAL",
        "batches": [],
        "summary": None,
    }
    (run_dir / "eval_summary.json").write_text("{half a fi")
    assert client.get("/api/runs/EVAL/eval").json()["summary"] is None


def test_what_the_cleanrl_worker_writes_is_what_the_page_shows(
    client: TestClient, store: Path, tmp_path: Path
) -> None:
    """The CleanRL worker's own writer of batch events and eval_summary.json, read back."""
    eval_summary = pytest.importorskip("mosaic_worker_cleanrl.eval_summary")
    run, run_dir = _eval_run(store, tmp_path)
    summary = eval_summary.EvalSummary(
        run_dir, run_id="EVAL", env_id="CartPole-v1", policy_path="/p.pt",
        batch_size=2, episodes_planned=4, min_interval=0.0,
    )  # fmt: skip
    for returns in ([10.0, 20.0], [30.0, 50.0]):
        run.add_event("policy_eval_batch", summary.add_batch(returns))
    got = client.get("/api/runs/EVAL/eval").json()
    assert [(b["batch"], b["avg"], b["min"], b["max"]) for b in got["batches"]] == [
        (1, 15.0, 10.0, 20.0),
        (2, 40.0, 30.0, 50.0),
    ]
    assert got["summary"]["avg_return"] == 27.5 and got["summary"]["status"] == "running"
