"""The multi-agent example worker (example_ma): per-agent telemetry through its CLI, one
FastLane stream per agent, pause/stop through the control protocol, and its runs in the
store (`mosaic run`, `mosaic runs show --json`) and in a sweep."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo", reason="pip install 'mosaic-worker-example[multiagent]'")

from mosaic_sdk.analytics import read_analytics  # noqa: E402
from mosaic_sdk.fastlane import FastLaneReader, agent_stream_id, create_fastlane_name  # noqa: E402
from mosaic_sdk.telemetry import classify_line, validate_line  # noqa: E402

AGENTS = ["paddle_0", "paddle_1"]
MOSAIC = [sys.executable, "-m", "mosaic_sdk.cli"]


def run_worker(config: dict, tmp_path: Path, env: dict | None = None) -> list[dict]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example.multiagent", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {}), "MOSAIC_RUN_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    lines = []
    for raw in done.stdout.splitlines():
        line = classify_line(raw)
        assert line.is_telemetry and validate_line(line.data) == [], raw
        lines.append(line.data)
    return lines


def test_every_line_names_a_declared_agent_and_the_counts_add_up(tmp_path: Path) -> None:
    lines = run_worker({"run_id": "ma1", "episodes": 2, "max_cycles": 25, "seed": 3}, tmp_path)
    started, completed = lines[0], lines[-1]
    assert started["event"] == "run_started" and started["payload"]["agents"] == AGENTS
    assert completed["event"] == "run_completed" and completed["payload"]["episodes"] == 2
    rows = [x for x in lines if x["type"] in ("step", "episode")]
    assert {x["agent_id"] for x in rows} == set(AGENTS)
    analytics = json.loads((tmp_path / "analytics.json").read_text())
    for agent in AGENTS:
        steps = [x for x in rows if x["type"] == "step" and x["agent_id"] == agent]
        episodes = [x for x in rows if x["type"] == "episode" and x["agent_id"] == agent]
        assert [e["episode_index"] for e in episodes] == [0, 1]
        counts = {
            "episodes": 2,
            "steps": len(steps),
            "total_reward": pytest.approx(sum(s["reward"] for s in steps)),
        }
        assert sum(e["steps"] for e in episodes) == len(steps)
        assert completed["payload"]["agents"][agent] == counts
        assert analytics["extra"]["agents"][agent] == counts
    assert analytics["episodes"] == 2 and analytics["status"] == "completed"


def test_one_fastlane_stream_per_agent_and_the_tile_on_the_run_segment(tmp_path: Path) -> None:
    run_id = f"ma-fl-{os.getpid()}"
    names = [run_id] + [agent_stream_id(run_id, i) for i in range(len(AGENTS))]
    seen: dict[str, tuple[int, int, int]] = {}
    stop = threading.Event()

    def watch() -> None:  # read each stream with the SDK's reader while the worker runs
        while not stop.is_set() and len(seen) < len(names):
            for name in names:
                if name in seen:
                    continue
                try:
                    reader = FastLaneReader.attach(name)
                except Exception:  # noqa: BLE001 - not there yet
                    continue
                try:
                    frame = reader.latest_frame()
                    if frame is not None:
                        seen[name] = (frame.height, frame.width, frame.channels)
                finally:
                    reader.close()
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        config = {"run_id": run_id, "episodes": 3, "max_cycles": 60, "step_delay_ms": 10}
        run_worker(config, tmp_path, env={"MOSAIC_FASTLANE_ONLY": "1"})
    finally:
        stop.set()
        watcher.join()
        leftover = [n for n in names if Path("/dev/shm", create_fastlane_name(n)).exists()]
        for name in leftover:  # ours: remove before failing
            Path("/dev/shm", create_fastlane_name(name)).unlink()
    assert names[1:] == [f"{run_id}-w1", f"{run_id}-w2"]
    assert seen == {
        run_id: (560, 480, 3),  # the two 280x480 views, tiled 2 rows x 1 column
        names[1]: (280, 480, 3),
        names[2]: (280, 480, 3),
    }
    assert leftover == []


def test_agent_stream_id_rejects_what_cannot_name_a_stream() -> None:
    assert agent_stream_id("r/1", 0) == "r/1-w1"
    assert create_fastlane_name(agent_stream_id("r/1", 0)) == "mosaic.fastlane.r_1-w1"
    for bad in (-1, 1.0, True, None):
        with pytest.raises(ValueError, match="agent_index must be an int >= 0"):
            agent_stream_id("r", bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="run_id must be a non-empty string"):
        agent_stream_id("", 0)


def test_mosaic_run_stores_rows_per_agent_and_runs_show_counts_them(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    done = subprocess.run(
        MOSAIC
        + ["run", "example_ma", "--run-id", "ma-run", "--store", str(store), "--json"]
        + ["--set", "episodes=2", "--set", "max_cycles=20", "--set", "seed=5"]
        + ["--set", "fastlane=true"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("mosaic.fastlane.ma-run")]
    conn = sqlite3.connect(store)
    try:
        rows = dict(
            conn.execute(
                "SELECT agent_id, COUNT(*) FROM episodes WHERE run_id = ? GROUP BY agent_id",
                ("ma-run",),
            ).fetchall()
        )
        steps = dict(
            conn.execute(
                "SELECT agent_id, COUNT(*) FROM steps WHERE run_id = ? GROUP BY agent_id",
                ("ma-run",),
            ).fetchall()
        )
    finally:
        conn.close()
    assert rows == dict.fromkeys(AGENTS, 2)
    shown = subprocess.run(
        MOSAIC + ["runs", "show", "ma-run", "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    assert run["status"] == "completed"
    per_agent = {a["agent_id"]: a for a in run["agents"]}
    assert sorted(per_agent) == AGENTS
    for agent in AGENTS:
        assert per_agent[agent]["episodes"] == 2
        assert per_agent[agent]["steps"] == steps[agent]
    # analytics.json sums up each agent's returns, and runs show tells them apart
    manifest = read_analytics(run["run_dir"])
    summaries = manifest.agent_summaries()
    assert sorted(summaries) == AGENTS
    for agent in AGENTS:
        assert summaries[agent].episodes == 2
        assert summaries[agent].mean_return == pytest.approx(per_agent[agent]["mean_return"])
    text = subprocess.run(
        MOSAIC + ["runs", "show", "ma-run", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "(all agents together)" in text
    for agent in AGENTS:
        (line,) = [x for x in text.splitlines() if x.split()[:2] == ["returns", agent]]
        assert line.rstrip().endswith("(2 episodes)")


def test_a_sweep_of_two_trials_stores_both_agents_of_each(tmp_path: Path) -> None:
    store = tmp_path / "sweep.sqlite"
    done = subprocess.run(
        MOSAIC
        + ["sweep", "example_ma", "--grid", "max_cycles=10,20", "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["trials"]) == 2
    conn = sqlite3.connect(store)
    try:
        for trial in result["trials"]:
            agents = {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT agent_id FROM episodes WHERE run_id = ?", (trial["run_id"],)
                )
            }
            assert agents == set(AGENTS), trial
    finally:
        conn.close()
    # each trial played 3 games (its two agents wrote 6 episode lines): counted as games
    assert [(t["games"], t["agent_episodes"]) for t in result["trials"]] == [(3, 6), (3, 6)]
    shown = subprocess.run(
        MOSAIC + ["sweeps", "show", result["sweep_id"], "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    header, *rows = [line.split() for line in shown.stdout.splitlines()[1:3]]
    assert header[:5] == ["trial", "try", "status", "return", "games"]
    assert rows[0][4] == "3"


def test_a_run_id_ending_in_w_n_is_refused_and_the_agent_stream_s_run_goes_on(
    tmp_path: Path,
) -> None:
    # issue 30: a run with id R-w1 took (or was refused) the segment of agent 1 of run R, and
    # nothing said why: now R-w1 is refused before anything starts, and R_w1 runs beside R
    run_id = f"clash{os.getpid()}"
    store = tmp_path / "runs.sqlite"
    segments = Path("/dev/shm")
    first = subprocess.Popen(
        MOSAIC
        + ["run", "example_ma", "--run-id", run_id, "--store", str(store), "--json"]
        + ["--set", "episodes=1000", "--set", "step_delay_ms=5", "--set", "fastlane=true"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stream = segments / create_fastlane_name(agent_stream_id(run_id, 0))
    try:
        deadline = time.monotonic() + 120
        while not stream.exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "no agent stream within 120 s"
            time.sleep(0.05)
        refused = subprocess.run(
            MOSAIC
            + ["run", "example", "--run-id", f"{run_id}-w1", "--store", str(store)]
            + ["--set", "episodes=1", "--set", "fastlane=true"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 2, refused.stderr
        [line] = refused.stderr.splitlines()
        assert f"run id '{run_id}-w1' ends in '-w1'" in line
        assert f"agent 1 of a run '{run_id}'" in line and f"'{run_id}_w1'" in line
        beside = subprocess.run(
            MOSAIC
            + ["run", "example", "--run-id", f"{run_id}_w1", "--store", str(store), "--json"]
            + ["--set", "episodes=1", "--set", "max_steps_per_episode=20"]
            + ["--set", "fastlane=true"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert beside.returncode == 0, beside.stderr
        assert json.loads(beside.stdout)["status"] == "completed"
        # the first run's agent stream is still its own, and still moving
        reader = FastLaneReader.attach(agent_stream_id(run_id, 0))
        try:
            first_frame = reader.latest_frame()
            deadline = time.monotonic() + 30
            while True:
                later = reader.latest_frame()
                if later is not None and (first_frame is None or later.seq > first_frame.seq):
                    break
                assert time.monotonic() < deadline, "the agent stream stopped"
                time.sleep(0.05)
            assert later.height == 280 and later.width == 480
        finally:
            reader.close()
        assert first.poll() is None
        with sqlite3.connect(store) as conn:
            ids = sorted(r[0] for r in conn.execute("SELECT run_id FROM runs"))
        assert ids == [run_id, f"{run_id}_w1"]
    finally:
        if first.poll() is None:
            first.terminate()
        first.communicate(timeout=60)
    assert not [n for n in os.listdir(segments) if n.startswith(f"mosaic.fastlane.{run_id}")]
