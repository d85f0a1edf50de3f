"""Every SDK worker speaks the protocol: the example worker driven over its real stdin/stdout."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mosaic_sdk.control.session import ControlCommandError, Session

SLOW = {"episodes": 3, "max_steps_per_episode": 60, "step_delay_ms": 10.0, "seed": 3}


def steps_of(session: Session) -> list[tuple[int, int, bool]]:
    return [
        (x["episode_index"], x["step_index"], bool(x["terminated"] or x["truncated"]))
        for x in list(session.lines)
        if x.get("type") == "step"
    ]


def running_threads(pid: int) -> int:
    """How many threads of ``pid`` are running (state R) now."""
    running = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
        running += state == "R"
    return running


def test_pause_holds_the_run_and_resume_continues_from_the_same_step(
    example_session: Callable[..., Session],
) -> None:
    session = example_session(SLOW)
    session.wait_for(lambda x: x.get("type") == "step", timeout=30)
    assert session.pause().paused is True
    session.wait_for(lambda x: x.get("event") == "paused")
    before = steps_of(session)
    assert session.process is not None
    # parked, not spinning: a looking process finds its threads asleep, not running (a
    # busy loop is running at nearly every look); a state, not a duration
    looks = []
    for _ in range(30):
        looks.append(running_threads(session.process.pid))
        time.sleep(0.02)
    assert sum(1 for n in looks if n) <= 3, looks
    assert steps_of(session) == before  # not one step while paused
    assert session.ping().paused is True
    with pytest.raises(ControlCommandError) as info:
        session.pause()
    assert info.value.code == "out_of_order"
    assert session.resume().paused is False
    session.wait_for(lambda x: x.get("type") == "step" and steps_of(session) != before)
    episode, step, ended = before[-1]
    following = steps_of(session)[len(before)]
    assert following == ((episode + 1, 0, following[2]) if ended else (episode, step + 1, False))
    assert "resumed" in session.events()
    session.stop()
    assert session.wait_exit(20) == 128 + signal.SIGTERM
    assert session.events()[-1] == "run_cancelled"


def test_stop_ends_like_sigterm_with_run_cancelled(example_session: Callable[..., Session]) -> None:
    session = example_session(SLOW)
    session.wait_for(lambda x: x.get("type") == "step", timeout=30)
    assert session.stop().stopping is True
    assert session.wait_exit(20) == 143
    session.wait_for(lambda x: x.get("event") == "run_cancelled")
    ended = [x for x in session.lines if x.get("event") == "run_cancelled"][0]
    assert ended["payload"]["reason"] == "stop command"


def test_sigterm_while_paused_still_ends_the_run(example_session: Callable[..., Session]) -> None:
    session = example_session(SLOW)
    session.wait_for(lambda x: x.get("type") == "step", timeout=30)
    session.pause()
    session.wait_for(lambda x: x.get("event") == "paused")
    assert session.process is not None
    session.process.send_signal(signal.SIGTERM)
    assert session.wait_exit(20) == 143
    session.wait_for(lambda x: x.get("event") == "run_cancelled")


def test_checkpoint_on_command_saves_a_file(example_session: Callable[..., Session]) -> None:
    session = example_session(SLOW)
    session.wait_for(lambda x: x.get("type") == "step", timeout=30)
    reply = session.checkpoint()
    assert reply.checkpoint_path and Path(reply.checkpoint_path).is_file()
    saved = session.wait_for(lambda x: x.get("event") == "checkpoint_saved")
    assert saved["payload"]["checkpoint_path"] == reply.checkpoint_path
    session.stop()
    assert session.wait_exit(20) == 143


def test_a_closed_stdin_is_not_an_error(example_session: Callable[..., Session]) -> None:
    session = example_session({"episodes": 2, "max_steps_per_episode": 20, "seed": 1})
    session.close_stdin()  # EOF: the run goes on and completes
    assert session.wait_exit(60) == 0
    assert session.events()[0] == "run_started" and session.events()[-1] == "run_completed"


def test_a_paused_run_keeps_its_fastlane_frame(example_session: Callable[..., Session]) -> None:
    from mosaic_sdk.fastlane import FastLaneReader

    session = example_session(SLOW, fastlane=True)
    session.wait_for(lambda x: x.get("type") == "step", timeout=30)
    session.pause()
    session.wait_for(lambda x: x.get("event") == "paused")
    assert session.run_id is not None
    reader = FastLaneReader.attach(session.run_id)
    try:
        first = reader.latest_frame()
        time.sleep(0.3)
        again = reader.latest_frame()
        assert first is not None and again is not None
        assert again.seq == first.seq and again.array().shape == first.array().shape
    finally:
        reader.close()
    session.resume()
    session.stop()
    assert session.wait_exit(20) == 143
