"""Interactive frames at display rate: a burst publishes few frames, the latest state always.

``serve_interactive`` runs in a thread of the test over a real ``ControlChannel``, with
CartPole wrapped for FastLane; a twin CartPole stepped with the same seed and actions says
what the newest frame must look like. No assert depends on how fast anything runs: the
intervals are long (500 ms for bursts, an hour where only ``close`` may publish).
"""

from __future__ import annotations

import io
import json
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.control.channel import EOF, ControlChannel
from mosaic_sdk.control.interactive import InteractiveSession, serve_interactive
from mosaic_sdk.control.session import Session
from mosaic_sdk.fastlane import FastLaneReader, FastLaneTelemetryWrapper
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink
from mosaic_sdk.telemetry import TelemetryEmitter
from mosaic_sdk.worker_cli import RunContext

SEED = 3
HOUR_MS = 3_600_000.0


def actions(n: int) -> list[int]:
    """``n`` actions that keep CartPole's pole up from ``reset(seed=SEED)`` (push towards the
    side it falls to)."""
    env = gymnasium.make("CartPole-v1")
    try:
        obs, _ = env.reset(seed=SEED)
        out: list[int] = []
        for _ in range(n):
            out.append(1 if obs[2] + 0.5 * obs[3] > 0 else 0)
            obs, _, terminated, truncated, _ = env.step(out[-1])
            assert not (terminated or truncated)
        return out
    finally:
        env.close()


def twin_render(steps: list[int]) -> np.ndarray:
    """The frame of CartPole after ``reset(seed=SEED)`` and ``steps``."""
    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    try:
        env.reset(seed=SEED)
        for action in steps:
            env.step(action)
        return np.asarray(env.render())
    finally:
        env.close()


class GrabAtClose(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Reads the segment's newest frame just before the env (and its segment) is closed."""

    def __init__(self, env: Any, run_id: str) -> None:
        super().__init__(env)
        self.run_id = run_id
        self.at_close: Any = None

    def close(self) -> None:
        reader = FastLaneReader.attach(self.run_id)
        try:
            self.at_close = reader.latest_frame()
        finally:
            reader.close()
        super().close()


class Served:
    """serve_interactive in a thread; commands go in through the channel as stdin would."""

    def __init__(self, run_id: str, interval_ms: float) -> None:
        self.run_id = run_id
        self.buf = io.StringIO()
        emitter = TelemetryEmitter(run_id, self.buf, flush_interval=0)
        ctx = RunContext(WorkerConfig(run_id=run_id), emitter, Path("."), None, 0)
        self.channel = ControlChannel(emitter, ctx.cancel)
        self.channel.interactive = queue.Queue()
        ctx.control = self.channel
        inner = gymnasium.make("CartPole-v1", render_mode="rgb_array")
        fastlane = FastLaneTelemetryWrapper(inner, run_id, interval_ms=interval_ms)
        self.env = GrabAtClose(fastlane, run_id)
        self.session = InteractiveSession(self.env, lambda obs: 0, info={"env_id": "CartPole-v1"})
        self.thread = threading.Thread(target=serve_interactive, args=(ctx, self.session, "t"))
        self.thread.start()
        self.ids = 0

    def send(self, cmd: str, **args: Any) -> str:
        self.ids += 1
        cid = str(self.ids)
        self.channel.handle_line(json.dumps({"v": 1, "id": cid, "cmd": cmd, **args}))
        return cid

    def reply(self, cid: str) -> dict[str, Any]:
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            for line in self.buf.getvalue().splitlines():
                data = json.loads(line)
                if data.get("type") == "control_reply" and data.get("id") == cid:
                    assert data["ok"], data
                    return data
            time.sleep(0.002)
        raise AssertionError(f"no reply to command {cid}")

    def stop(self) -> None:
        self.channel.interactive.put(EOF)
        self.thread.join(30.0)


@pytest.fixture
def serve() -> Iterator[Callable[[float], Served]]:
    made: list[Served] = []

    def start(interval_ms: float) -> Served:
        served = Served(f"frames-{os.getpid()}-{uuid.uuid4().hex[:10]}", interval_ms)
        made.append(served)
        return served

    try:
        yield start
    finally:
        for served in made:
            served.stop()
            shm_unlink(segment_name(served.run_id))


def wait_for_frame(reader: FastLaneReader, number: int) -> Any:
    """The newest frame once the ring holds ``number`` frames (fails after 30 s)."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        frame = reader.latest_frame()
        if frame is not None and frame.seq >= number:
            return frame
        time.sleep(0.002)
    raise AssertionError(f"frame {number} never came")


def test_a_burst_publishes_fewer_frames_and_then_the_latest_state(serve) -> None:
    served = serve(500.0)
    reset = served.reply(served.send("reset", seed=SEED))
    assert reset["frame"] == {
        "fastlane_run_id": served.run_id,
        "frames_published": 1,
        "pending": False,  # the first frame is always due
    }
    burst = actions(30)
    ids = [served.send("step", action=a) for a in burst]  # all queued before any reply
    replies = [served.reply(cid) for cid in ids]
    assert not any(r["episode_done"] for r in replies)
    last = replies[-1]["frame"]
    assert last["frames_published"] < len(burst)  # display rate, not one frame a step
    assert any(r["frame"]["pending"] for r in replies)  # a skipped step says so
    # No further command: the newest state's frame arrives by itself.
    reader = FastLaneReader.attach(served.run_id)
    try:
        frame = wait_for_frame(reader, last["frames_published"] + int(last["pending"]))
        assert np.array_equal(frame.array(), twin_render(burst))
        assert not served.session.fastlane().frame_pending
    finally:
        reader.close()


def test_a_pending_step_frame_arrives_without_another_command(serve) -> None:
    served = serve(1000.0)
    served.reply(served.send("reset", seed=SEED))
    step = served.reply(served.send("step", action=1))  # right after the reset's frame
    assert step["frame"]["pending"] is True and step["frame"]["frames_published"] == 1
    reader = FastLaneReader.attach(served.run_id)
    try:
        frame = wait_for_frame(reader, 2)
        assert frame.seq == 2 and np.array_equal(frame.array(), twin_render([1]))
    finally:
        reader.close()


@pytest.mark.parametrize("ending", ["close", "eof"])
def test_the_end_of_a_session_publishes_the_pending_frame(serve, ending: str) -> None:
    served = serve(HOUR_MS)  # only the end of the session can publish after the reset
    served.reply(served.send("reset", seed=SEED))
    steps = actions(6)
    replies = [served.reply(served.send("step", action=a)) for a in steps]
    assert [r["frame"]["frames_published"] for r in replies] == [1] * len(steps)
    assert all(r["frame"]["pending"] for r in replies)
    if ending == "close":
        closed = served.reply(served.send("close"))
        assert closed["frame"]["frames_published"] == 2 and closed["frame"]["pending"] is False
    else:
        served.channel.interactive.put(EOF)  # a closed stdin ends the session as close does
    served.thread.join(30.0)
    assert not served.thread.is_alive()
    frame = served.env.at_close
    assert frame is not None and frame.seq == 2
    assert np.array_equal(frame.array(), twin_render(steps))


def test_session_wait_frame_gives_the_frame_of_the_last_step(
    example_session: Callable[..., Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOSAIC_FASTLANE_INTERVAL_MS", "500")
    session = example_session({"mode": "interactive", "env_id": "CartPole-v1"}, fastlane=True)
    with pytest.raises(ValueError, match="no frame to wait for"):
        session.wait_frame()
    session.reset(seed=SEED)
    steps = actions(12)
    replies = [session.step(action=a) for a in steps]
    assert replies[-1].frame is not None
    assert replies[-1].frame.frames_published < len(steps)  # the worker's default: throttled
    frame = session.wait_frame(timeout=30.0)
    assert np.array_equal(frame.array(), twin_render(steps))
    assert session.close().closed is True
    assert session.wait_exit(20) == 0


def test_json_frames_of_the_dialect_still_show_every_step(
    example_session: Callable[..., Session],
) -> None:
    # FastLane throttles its own frames; the deployed dialect's JSON frames are every step's.
    config = {"mode": "interactive", "env_id": "CartPole-v1", "json_frames": True}
    session = example_session(config, fastlane=True)
    session.send_line(json.dumps({"cmd": "reset", "seed": SEED}))
    for _ in range(3):
        session.send_line(json.dumps({"cmd": "step"}))
    lines = [
        session.wait_for(
            lambda x, n=n: x.get("type") == "step" and x.get("step_index") == n, timeout=30.0
        )
        for n in (1, 2, 3)
    ]
    taken: list[int] = []
    for line in lines:
        taken.append(line["action"])
        pixels = np.asarray(line["render_payload"]["rgb"], dtype=np.uint8)
        assert np.array_equal(pixels, twin_render(taken))


def test_a_render_that_fails_between_commands_stops_frames_not_the_session(serve) -> None:
    served = serve(HOUR_MS)
    served.reply(served.send("reset", seed=SEED))
    served.reply(served.send("step", action=0))  # pending: only close publishes it
    cartpole = served.session.fastlane().env

    def broken() -> None:
        raise RuntimeError("display gone")

    cartpole.render = broken
    with pytest.warns(RuntimeWarning, match="render\\(\\) raised RuntimeError: display gone"):
        closed = served.reply(served.send("close"))
    assert closed["closed"] is True and closed["frame"]["frames_published"] == 1
    served.thread.join(30.0)
    assert not served.thread.is_alive()
    assert '"event":"run_completed"' in served.buf.getvalue().replace(" ", "")
