"""Interactive mode: protocol version 1 and the deployed CleanRL dialect 1.0, exactly."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from mosaic_sdk.control.session import ControlCommandError, Session

INTERACTIVE = {"mode": "interactive", "env_id": "CartPole-v1", "seed": 5}


def play(session: Session, seed: int, steps: int) -> list[tuple]:
    first = session.reset(seed=seed)
    out: list[tuple] = [tuple(first.observation)]
    for _ in range(steps):
        reply = session.step()
        out.append((reply.action, reply.reward, tuple(reply.observation), reply.episode_done))
        if reply.episode_done:
            break
    return out


def test_reset_and_step_replay_a_seeded_episode(example_session: Callable[..., Session]) -> None:
    session = example_session({**INTERACTIVE, "policy": "random"})
    session.wait_for(lambda x: x.get("type") == "init", timeout=30)
    a = play(session, 11, 40)
    b = play(session, 11, 40)
    c = play(session, 12, 40)
    assert a == b and a != c
    assert session.close().closed is True
    assert session.wait_exit(20) == 0
    assert session.events() == ["run_started", "run_completed"]


def test_step_replies_carry_the_episode_state(example_session: Callable[..., Session]) -> None:
    session = example_session(INTERACTIVE)
    ready = session.reset(seed=1)
    assert (ready.episode_index, ready.step_index, ready.episode_return) == (0, 0, 0.0)
    total, reply = 0.0, None
    for n in range(1, 600):
        reply = session.step()
        total += reply.reward or 0.0
        assert reply.step_index == n and reply.episode_index == 0
        assert reply.episode_return == pytest.approx(total)
        if reply.episode_done:
            break
    assert reply is not None and reply.episode_done and (reply.terminated or reply.truncated)
    with pytest.raises(ControlCommandError) as info:
        session.step()
    assert info.value.code == "out_of_order" and "reset" in info.value.hint
    episode = session.wait_for(lambda x: x.get("type") == "episode")
    assert episode["steps"] == reply.step_index and episode["episode_seed"] == 1
    assert session.reset(seed=2).episode_index == 1


def test_actions_from_outside_and_act(example_session: Callable[..., Session]) -> None:
    session = example_session(INTERACTIVE)
    with pytest.raises(ControlCommandError) as info:
        session.step()
    assert info.value.code == "out_of_order" and "before reset" in info.value.message
    obs = session.reset(seed=3).observation
    assert session.act(obs).action in (0, 1)
    assert session.step(action=1).action == 1
    with pytest.raises(ControlCommandError) as bad:
        session.step(action=7)
    assert bad.value.code == "failed" and "action space" in bad.value.message
    assert session.step(action=0).step_index == 2  # the bad action took no step
    with pytest.raises(ControlCommandError) as paused:
        session.pause()
    assert paused.value.code == "not_supported"


def test_frames_go_through_fastlane(example_session: Callable[..., Session]) -> None:
    from mosaic_sdk.fastlane import FastLaneReader

    session = example_session(INTERACTIVE, fastlane=True)
    first = session.reset(seed=1)
    assert first.frame is not None and first.frame.fastlane_run_id == session.run_id
    assert first.frame.frames_published == 1 and first.frame.pending is False
    reply = session.step()
    # The step's frame is published (frame 2) or pending (published soon as frame 2).
    assert reply.frame is not None
    assert reply.frame.frames_published + reply.frame.pending == 2
    reader = FastLaneReader.attach(session.run_id or "")
    try:
        frame = reader.latest_frame()
        assert frame is not None and frame.array().ndim == 3
    finally:
        reader.close()
    session.close()
    assert session.wait_exit(20) == 0


def dialect(session: Session, command: dict) -> None:
    session.send_line(json.dumps(command))


def test_the_deployed_dialect_exactly(example_session: Callable[..., Session]) -> None:
    session = example_session(INTERACTIVE)
    init = session.wait_for(lambda x: x.get("type") == "init", timeout=30)
    assert init == {
        "type": "init",
        "run_id": session.run_id,
        "env_id": "CartPole-v1",
        "algo": "balance",
        "policy_path": None,
        "version": "1.0",
    }
    dialect(session, {"cmd": "step"})
    dialect(session, {"cmd": "ping"})
    dialect(session, {"cmd": "reset", "seed": 4})
    for _ in range(600):
        dialect(session, {"cmd": "step"})
    dialect(session, {"cmd": "dance"})
    dialect(session, {"cmd": "stop"})
    assert session.wait_exit(30) == 143
    lines = session.dialect_lines
    before_reset = "ValueError: step before reset: send reset first"
    assert lines[1] == {"type": "error", "message": before_reset}
    assert lines[2] == {"type": "pong"}
    ready = lines[3]
    assert ready == {
        "type": "ready",
        "run_id": session.run_id,
        "env_id": "CartPole-v1",
        "algo": "balance",
        "seed": 4,
        "observation_shape": [4],
        "step_index": 0,
        "episode_index": 0,
        "episode_reward": 0.0,
    }
    step = lines[4]
    assert set(step) == {
        "type",
        "step_index",
        "episode_index",
        "action",
        "reward",
        "terminated",
        "truncated",
        "episode_reward",
    }
    assert (step["step_index"], step["episode_index"], step["episode_reward"]) == (1, 0, 1.0)
    done_at = next(i for i, x in enumerate(lines) if x["type"] == "episode_done")
    last = lines[done_at - 1]
    assert last["type"] == "step" and (last["terminated"] or last["truncated"])
    assert lines[done_at] == {
        "type": "episode_done",
        "total_reward": last["episode_reward"],
        "episode_length": last["step_index"],
        "episode_number": 1,
    }
    assert lines[done_at + 1]["episode_index"] == 1 and lines[done_at + 1]["step_index"] == 1
    unknown = "unknown command 'dance'; known: reset, step, ping, stop"
    assert lines[-2] == {"type": "error", "message": unknown}
    assert lines[-1] == {"type": "stopped"}


def test_the_dialect_can_send_frames_as_json_like_the_deployed_worker() -> None:
    import gymnasium

    from mosaic_sdk.control.dialect import render_payload

    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    env.close()
    payload = render_payload(frame)
    assert payload is not None and payload["mode"] == "rgb_array"
    assert (payload["height"], payload["width"]) == frame.shape[:2]
    assert payload["rgb"] == frame.tolist()


def test_commands_after_the_end_of_a_session_still_get_their_reply() -> None:
    import io
    import queue
    import threading

    from mosaic_sdk.control.channel import ControlChannel
    from mosaic_sdk.telemetry import TelemetryEmitter

    buf = io.StringIO()
    channel = ControlChannel(TelemetryEmitter("r", buf, flush_interval=0), threading.Event())
    channel.interactive = queue.Queue()
    channel.handle_line('{"v": 1, "id": "queued", "cmd": "step"}')
    channel.handle_line('{"cmd": "step"}')
    channel.end_interactive()  # the session ended before it read them
    channel.handle_line('{"v": 1, "id": "late", "cmd": "reset"}')
    channel.handle_line('{"v": 1, "id": "ping", "cmd": "ping"}')
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    replies = {x["id"]: x for x in lines if x.get("type") == "control_reply"}
    assert replies["queued"]["error"]["code"] == "out_of_order"
    assert replies["late"]["error"]["code"] == "out_of_order"
    assert replies["ping"]["ok"] is True
    assert {"type": "error", "message": "the interactive session has ended"} in lines
