"""Playing against a turn-based worker (example_turnbased, tic-tac-toe): through
:class:`~mosaic_sdk.control.Session` and through a real `mosaic play` whose stdin is scripted.
A person acts for one agent, the worker's policy plays the other; every reply shows the
legal moves, and an illegal move is refused and not played."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="pip install 'mosaic-worker-example[turnbased]'")

from mosaic_worker_example.turnbased import COLOURS  # noqa: E402

from mosaic_sdk.control import Session  # noqa: E402
from mosaic_sdk.control.session import ControlCommandError  # noqa: E402
from mosaic_sdk.fastlane import FastLaneReader, agent_stream_id, create_fastlane_name  # noqa: E402

WORKER = "example_turnbased"


def plugin_env() -> dict[str, str]:
    """Registers the worker through MOSAIC_PLUGINS when its entry point is not installed."""
    installed = {ep.name for ep in metadata.entry_points(group="mosaic.workers")}
    if WORKER in installed:
        return {}
    return {"MOSAIC_PLUGINS": f"{WORKER}=mosaic_worker_example.turnbased_plugin"}


def launch(tmp_path: Path, **config: object) -> Session:
    path = tmp_path / "config.json"
    settings = {"run_id": "play", "seed": 1, "mode": "interactive", "episodes": 50, **config}
    path.write_text(json.dumps(settings))
    argv = [sys.executable, "-m", "mosaic_worker_example.turnbased", "--config", str(path)]
    return Session.launch(argv, timeout=60)


def test_a_person_plays_one_side_and_the_policy_the_other(tmp_path: Path) -> None:
    with launch(tmp_path, human="player_2") as session:
        first = session.reset(seed=5)
        # player_1 opens: the policy's move is played before the person's turn
        assert first.agent_id == "player_2"
        assert [m["agent_id"] for m in first.played] == ["player_1"]
        opened = first.played[0]["action"]
        assert opened not in first.legal_actions and len(first.legal_actions) == 8
        with pytest.raises(ControlCommandError) as refused:
            session.step(action=opened)  # the occupied square
        assert refused.value.code == "illegal_action"
        assert f"move {opened} is not legal for player_2" in refused.value.message
        assert str(first.legal_actions) in refused.value.message
        with pytest.raises(ControlCommandError, match="illegal_action"):
            session.step(action=9)  # off the board
        reply = first
        moves = 0
        while not reply.episode_done:
            move = reply.legal_actions[-1]
            reply = session.step(action=move)
            moves += 1
            assert reply.action == move  # the refused moves were not played
            assert reply.step_index == moves
            assert all(m["agent_id"] == "player_1" for m in reply.played)
        assert reply.legal_actions == [] and reply.reward in (-1.0, 0.0, 1.0)
        assert reply.episode_return == reply.reward  # the game's only reward: its result
        assert session.close().closed
    lines = [x for x in session.lines if x.get("type") == "episode"]
    assert [(x["agent_id"], x["steps"]) for x in lines] == [("player_2", moves)]


def test_a_seeded_game_replays_and_the_policy_can_move_for_the_person(tmp_path: Path) -> None:
    with launch(tmp_path, human="player_1") as session:
        games = []
        for _ in range(2):
            reply = session.reset(seed=2)
            assert reply.played == [] and len(reply.legal_actions) == 9  # player_1 opens
            played = []
            while not reply.episode_done:
                reply = session.step()  # no move given: the policy moves for the person
                played.append((reply.action, [m["action"] for m in reply.played]))
            games.append(played)
        assert games[0] == games[1]
        with pytest.raises(ControlCommandError, match="out_of_order"):
            session.step(action=0)  # the game is over
        session.close()


def test_mosaic_play_shows_the_board_and_refuses_an_illegal_move(tmp_path: Path) -> None:
    script = "reset 5\n9\nstep 0\nrun 20\nquit\n"
    args = ["--set", "episodes=50", "--set", "human=player_2", "--runs-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "play", WORKER, *args],
        input=script,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **plugin_env()},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"playing {WORKER} (run ")
    assert "  player_1 played " in out
    assert "your turn (player_2): legal moves [" in out
    # the board: three rows of three cells, the policy's opening move an o
    board = [line for line in out.splitlines() if line.startswith("   ") and len(line.split()) == 3]
    assert len(board) >= 3 and "o" in " ".join(board[:3]).split()
    assert "error: step failed [illegal_action]: move 9 is not legal for player_2 now" in out
    assert "game over: player_2 ended with return " in out
    assert out.rstrip().endswith("session ended (exit code 0)")


def marks(frame: np.ndarray, player: str) -> int:
    """Pixels of one player's marks in a board image (draw_board's colours)."""
    colour = COLOURS[1 if player == "player_1" else 2]
    return int(np.all(frame == colour, axis=-1).sum())


def test_the_board_is_on_fastlane_while_a_person_plays(tmp_path: Path) -> None:
    run_id = f"play-board-{os.getpid()}"
    names = [create_fastlane_name(n) for n in (run_id, f"{run_id}-w1", f"{run_id}-w2")]
    try:
        with launch(tmp_path, human="player_2", run_id=run_id, fastlane=True) as session:
            opening = session.reset(seed=5)
            assert opening.frame is not None and opening.frame.fastlane_run_id == run_id
            before = session.wait_frame(timeout=10).array().copy()
            # the policy's opening move (player_1's X) is on the board, no O yet
            assert marks(before, "player_1") > 0 and marks(before, "player_2") == 0
            move = opening.legal_actions[0]
            reply = session.step(action=move)
            after = session.wait_frame(timeout=10).array().copy()
            assert before.shape == after.shape == (136, 136, 3)
            assert marks(after, "player_2") > 0  # the person's O is drawn
            cell = np.s_[
                4 + (move // 3) * 44 : 4 + (move // 3) * 44 + 40,
                4 + (move % 3) * 44 : 4 + (move % 3) * 44 + 40,
            ]
            assert marks(before[cell], "player_2") == 0 and marks(after[cell], "player_2") > 0
            if reply.played:  # the policy answered: its second X too
                assert marks(after, "player_1") > marks(before, "player_1")
            # each player's own stream shows the board too
            for index in (0, 1):
                reader = FastLaneReader.attach(agent_stream_id(run_id, index))
                try:
                    frame = reader.latest_frame()
                finally:
                    reader.close()
                assert frame is not None and (frame.height, frame.width) == (136, 136)
            session.close()
        assert session.process is None or session.process.wait(timeout=30) == 0
        assert [n for n in names if Path("/dev/shm", n).exists()] == []
    finally:
        for name in names:  # ours: gone if the worker died before removing them
            Path("/dev/shm", name).unlink(missing_ok=True)
