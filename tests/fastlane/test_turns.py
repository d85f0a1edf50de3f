"""FastLane for turn-based games (FastLaneAECWrapper): the board after every move on the run's
stream, each agent's moves on its own stream with its own HUD numbers, dead steps ignored,
pending frames, segments removed on close; maybe_wrap_env picks it for an AEC env."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.fastlane import (
    FastLaneAECWrapper,
    FastLaneReader,
    agent_stream_id,
    create_fastlane_name,
)
from mosaic_sdk.fastlane.environment import FastLaneSettings
from mosaic_sdk.plugins import maybe_wrap_env

AGENTS = ("first", "second")


class Race:
    """A tiny AEC game with PettingZoo's shape: the agents take turns filling cells of a row
    of three; whoever fills the last one wins (+1, the other -1). Its render is the row, one
    4x4 block per cell (0 empty, 100 first's, 200 second's)."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode: str | None = "rgb_array") -> None:
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.renders = 0

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.cells = [0, 0, 0]
        self.agents = list(AGENTS)
        self.agent_selection = AGENTS[0]
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)

    def observe(self, agent: str) -> list[int]:
        return list(self.cells)

    def last(self) -> tuple:
        agent = self.agent_selection
        return self.observe(agent), self.rewards[agent], self.terminations[agent], False, {}

    def agent_iter(self) -> Iterator[str]:
        while self.agents:
            yield self.agent_selection

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent]:  # PettingZoo's dead step: the agent leaves
            self.agents.remove(agent)
            self.rewards = dict.fromkeys(self.agents, 0.0)
            if self.agents:
                self.agent_selection = self.agents[0]
            return
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.cells[self.cells.index(0)] = AGENTS.index(agent) + 1
        if 0 not in self.cells:
            other = next(a for a in AGENTS if a != agent)
            self.rewards = {agent: 1.0, other: -1.0}
            self.terminations = dict.fromkeys(AGENTS, True)
        self.agent_selection = next(a for a in AGENTS if a != agent)

    def render(self) -> np.ndarray:
        self.renders += 1
        row = np.repeat(np.asarray(self.cells, dtype=np.uint8) * 100, 4)
        return np.repeat(np.repeat(row[None, :, None], 4, axis=0), 3, axis=2)

    def close(self) -> None:
        pass


@pytest.fixture
def run_id() -> Iterator[str]:
    rid = f"test-turns-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    names = [
        create_fastlane_name(n) for n in (rid, agent_stream_id(rid, 0), agent_stream_id(rid, 1))
    ]
    try:
        yield rid
    finally:
        for name in names:
            Path("/dev/shm", name).unlink(missing_ok=True)


def latest(stream: str):
    reader = FastLaneReader.attach(stream)
    try:
        frame = reader.latest_frame()
    finally:
        reader.close()
    assert frame is not None
    return frame


def test_every_move_shows_on_the_run_stream_and_the_mover_s(run_id: str) -> None:
    env = FastLaneAECWrapper(Race(), run_id, interval_ms=0)
    env.reset(seed=1)
    assert latest(run_id).array()[0, ::4, 0].tolist() == [0, 0, 0]
    moves = 0
    for _agent in env.agent_iter():  # the wrapper runs a worker's AEC loop unchanged
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else 0)
        moves += 1
        if moves == 1:  # the first player's opening move
            assert latest(run_id).array()[0, ::4, 0].tolist() == [100, 0, 0]
            # the second player has not moved: its stream still shows the empty row
            assert latest(agent_stream_id(run_id, 1)).array()[0, ::4, 0].tolist() == [0, 0, 0]
            assert latest(agent_stream_id(run_id, 0)).array()[0, ::4, 0].tolist() == [100, 0, 0]
    final = [100, 200, 100]
    assert latest(run_id).array()[0, ::4, 0].tolist() == final
    first, second = latest(agent_stream_id(run_id, 0)), latest(agent_stream_id(run_id, 1))
    # the end of the game reaches both streams, each with its own result
    assert first.array()[0, ::4, 0].tolist() == second.array()[0, ::4, 0].tolist() == final
    assert (first.metrics.last_reward, first.metrics.rolling_return) == (1.0, 1.0)
    assert (second.metrics.last_reward, second.metrics.rolling_return) == (-1.0, -1.0)
    # the run's HUD follows the first agent; the two dead steps published nothing
    assert latest(run_id).metrics.rolling_return == 1.0
    assert env.frames_published == 4  # the reset and three moves
    env.close()
    for stream in (run_id, agent_stream_id(run_id, 0), agent_stream_id(run_id, 1)):
        assert not Path("/dev/shm", create_fastlane_name(stream)).exists()


def test_a_board_is_rendered_once_per_move_and_skipped_frames_are_pending(run_id: str) -> None:
    race = Race()
    env = FastLaneAECWrapper(race, run_id, interval_ms=60_000)
    env.reset()
    assert race.renders == 1  # one render shared by the three streams
    env.step(0)
    assert race.renders == 1 and env.frame_pending  # the interval skipped it
    assert 0 < env.pending_frame_due_in() <= 60
    assert env.publish_pending_frame()
    assert race.renders == 2 and not env.frame_pending and env.pending_frame_due_in() is None
    assert latest(run_id).array()[0, ::4, 0].tolist() == [100, 0, 0]
    env.close()


def test_maybe_wrap_env_wraps_an_aec_env_and_off_publishes_nothing(run_id: str) -> None:
    on = FastLaneSettings(enabled=True, interval_ms=0)
    env = maybe_wrap_env(Race(), run_id=run_id, settings=on)
    assert isinstance(env, FastLaneAECWrapper) and env.possible_agents == list(AGENTS)
    env.reset()
    assert latest(run_id).width == 12
    env.close()
    off = FastLaneAECWrapper(Race(), run_id, video_mode="off")
    off.reset()
    off.step(0)
    assert not off.publishing and off.frames_published == 0 and not off.frame_pending
    assert not Path("/dev/shm", create_fastlane_name(run_id)).exists()
    off.close()


def test_a_game_without_rgb_array_render_is_refused_once_with_the_reason(run_id: str) -> None:
    with pytest.warns(RuntimeWarning, match="render_mode is None, not 'rgb_array'"):
        env = FastLaneAECWrapper(Race(render_mode=None), run_id)
    env.reset()
    env.step(0)
    assert env.frames_published == 0
    assert not Path("/dev/shm", create_fastlane_name(run_id)).exists()
    env.close()
    with pytest.raises(TypeError, match="is not a PettingZoo AEC env"):
        FastLaneAECWrapper(object(), run_id)
