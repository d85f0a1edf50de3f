"""The turn-based example worker (example_turnbased): tic-tac-toe players whose rewards are
credited to the move that earned them, per-agent step, episode and metrics lines, learning
against a random opponent and by self-play."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo", reason="pip install 'mosaic-worker-example[turnbased]'")

from mosaic_sdk.fastlane import FastLaneReader, agent_stream_id, create_fastlane_name  # noqa: E402
from mosaic_sdk.telemetry import classify_line, validate_line  # noqa: E402

AGENTS = ["player_1", "player_2"]


def run_worker(config: dict, tmp_path: Path) -> list[dict]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "tb", "seed": 3, **config}))
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example.turnbased", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    lines = []
    for raw in done.stdout.splitlines():
        line = classify_line(raw)
        assert line.is_telemetry and validate_line(line.data) == [], raw
        lines.append(line.data)
    return lines


def own(lines: list[dict], kind: str, agent: str, game: int | None = None) -> list[dict]:
    return [
        x
        for x in lines
        if x["type"] == kind
        and x.get("agent_id") == agent
        and (game is None or x["episode_index"] == game)
    ]


def test_each_move_is_reported_by_its_mover_with_the_reward_it_earned(tmp_path: Path) -> None:
    lines = run_worker({"episodes": 20}, tmp_path)
    started, completed = lines[0], lines[-1]
    assert started["payload"]["agents"] == AGENTS
    assert completed["event"] == "run_completed"
    assert completed["payload"]["episodes"] == 20  # games, not agent-episodes
    decided = 0
    for game in range(20):
        returns = {}
        for agent in AGENTS:
            steps = own(lines, "step", agent, game)
            (episode,) = own(lines, "episode", agent, game)
            # numbered by the agent's own moves; the episode line sums them
            assert [s["step_index"] for s in steps] == list(range(episode["steps"]))
            assert sum(s["reward"] for s in steps) == episode["total_reward"]
            assert steps[-1]["terminated"] and not any(s["terminated"] for s in steps[:-1])
            # only the last move of a game earns anything in tic-tac-toe: the win or the loss
            assert all(s["reward"] == 0 for s in steps[:-1])
            returns[agent] = episode["total_reward"]
        first, second = (
            own(lines, "episode", "player_1", game)[0],
            own(lines, "episode", "player_2", game)[0],
        )
        assert first["steps"] - second["steps"] in (0, 1)  # player_1 opens: moves alternate
        assert sum(returns.values()) == 0  # the loser's last move carries the loss
        decided += returns["player_1"] != 0
    assert decided > 0
    counts = completed["payload"]["agents"]
    for agent in AGENTS:
        assert counts[agent]["episodes"] == 20
        assert counts[agent]["steps"] == len(own(lines, "step", agent))
    analytics = json.loads((tmp_path / "analytics.json").read_text())
    assert analytics["episodes"] == 20 and analytics["extra"]["agents"] == counts
    for agent in AGENTS:  # each player's return summary, apart (the sum per game is 0)
        mine = [e["total_reward"] for e in own(lines, "episode", agent)]
        summary = analytics["extra"]["agent_returns"][agent]
        assert summary["episodes"] == 20 and summary["last_return"] == mine[-1]
        assert summary["mean_return"] == pytest.approx(sum(mine) / 20)


def test_each_agent_reports_its_own_series(tmp_path: Path) -> None:
    lines = run_worker({"episodes": 30, "metrics_every": 10, "window": 10}, tmp_path)
    metrics = [x["payload"] for x in lines if x.get("event") == "metrics"]
    assert [(m["agent_id"], m["step"]) for m in metrics] == [
        (agent, game) for game in (10, 20, 30) for agent in AGENTS
    ]
    for m in metrics:
        assert set(m["values"]) == {"mean_return", "win_rate", "loss_rate"}
    # zero-sum: one's wins are the other's losses over the same window
    for a, b in zip(metrics[::2], metrics[1::2], strict=True):
        assert a["values"]["win_rate"] == b["values"]["loss_rate"]


def win_rates(lines: list[dict], agent: str, games: range) -> float:
    results = [own(lines, "episode", agent, g)[0]["total_reward"] for g in games]
    return sum(r > 0 for r in results) / len(results)


def test_the_learner_beats_a_random_opponent_more_often_as_it_learns(tmp_path: Path) -> None:
    lines = run_worker({"episodes": 800, "step_every": 1000}, tmp_path)
    early = win_rates(lines, "player_1", range(0, 100))
    late = win_rates(lines, "player_1", range(700, 800))
    assert late > early and late >= 0.75, (early, late)


def test_self_play_learns_both_sides(tmp_path: Path) -> None:
    lines = run_worker({"episodes": 800, "opponent": "self", "step_every": 1000}, tmp_path)
    tables = sorted(tmp_path.glob("checkpoint-*.json"))
    saved = json.loads(tables[-1].read_text())
    assert set(saved) == set(AGENTS)  # one shared table, saved for each side
    assert saved["player_1"] == saved["player_2"] and len(saved["player_1"]) > 100
    late = [own(lines, "episode", "player_1", g)[0]["total_reward"] for g in range(700, 800)]
    assert sum(r == 0 for r in late) > 20  # two learners draw more and more often


def test_dry_run_says_what_it_would_play(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "tb", "opponent": "self"}))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mosaic_worker_example.turnbased",
            "--config",
            str(path),
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "self-play" in done.stderr and done.stdout == ""


def test_a_run_publishes_the_board_and_it_changes_with_the_moves(tmp_path: Path) -> None:
    run_id = f"tb-board-{os.getpid()}"
    streams = [run_id, agent_stream_id(run_id, 0), agent_stream_id(run_id, 1)]
    path = tmp_path / "config.json"
    config = {"run_id": run_id, "seed": 3, "episodes": 2, "step_delay_ms": 100, "fastlane": True}
    path.write_text(json.dumps(config))
    worker = subprocess.Popen(
        [sys.executable, "-m", "mosaic_worker_example.turnbased", "--config", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)},
    )
    boards: list[bytes] = []
    seen: set[str] = set()
    try:
        while worker.poll() is None and len(boards) < 3:
            for stream in streams:
                try:
                    reader = FastLaneReader.attach(stream)
                except Exception:  # noqa: BLE001 - not there yet, or gone at the end
                    continue
                try:
                    frame = reader.latest_frame()
                finally:
                    reader.close()
                if frame is None:
                    continue
                seen.add(stream)
                if stream == run_id and (not boards or frame.data != boards[-1]):
                    boards.append(bytes(frame.data))
        _, stderr = worker.communicate(timeout=120)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        segments = [Path("/dev/shm", create_fastlane_name(stream)) for stream in streams]
        leftover = [p.name for p in segments if p.exists()]
        for segment in segments:  # ours: gone if the worker died before removing them
            segment.unlink(missing_ok=True)
    assert worker.returncode == 0, stderr
    assert leftover == []  # the worker removed them when its env closed
    assert len(boards) >= 3  # the board changes as the moves are played
    assert seen == set(streams)  # the run's stream and each player's
