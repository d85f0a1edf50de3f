"""Every env a script makes reports its episodes, as the script itself sees them: through
``gymnasium.make``, ``gymnasium.make_vec`` (each vectorization mode) and the vector env
classes; episodes still running at the end are reported unfinished; the control safe point is
passed once per step the script takes; frames only of envs that render ``rgb_array``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from mosaic_sdk.instrument.env_telemetry import (
    TelemetrySink,
    VectorEpisodeTelemetry,
)
from mosaic_sdk.instrument.gym_patch import Instrumentation
from tests.instrument.recording import RecordingEmitter


def _sink(emitter: RecordingEmitter, every: int = 1) -> TelemetrySink:
    return TelemetrySink(emitter, step_every=every)  # type: ignore[arg-type]


def _short(max_steps: int) -> Callable[[], Any]:
    return lambda: gymnasium.make("CartPole-v1", max_episode_steps=max_steps)


def _play(envs: Any, steps: int) -> tuple[list[tuple[float, int]], int]:
    """Step a vector env under vector RecordEpisodeStatistics: the (return, length) of each
    episode that ended, as the script sees them, and the env steps taken (a step that only
    resets an env, next-step autoreset, is none)."""
    next_step = envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    envs = RecordEpisodeStatistics(envs)
    envs.reset(seed=3)
    seen: list[tuple[float, int]] = []
    resetting = np.zeros(envs.num_envs, dtype=bool)
    env_steps = 0
    for _ in range(steps):
        _, _, terminated, truncated, infos = envs.step(envs.action_space.sample())
        env_steps += int((~resetting).sum())
        resetting = (terminated | truncated) & ~resetting if next_step else resetting
        if "episode" in infos:
            for i in np.flatnonzero(infos["_episode"]):
                seen.append((float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])))
    envs.close()
    return seen, env_steps


def _ours(emitter: RecordingEmitter) -> list[tuple[float, int]]:
    return sorted((e["return"], e["steps"]) for e in emitter.finished())


def test_a_made_env_reports_each_episode_and_the_running_one_as_unfinished() -> None:
    emitter = RecordingEmitter()
    sink = _sink(emitter)
    with Instrumentation(sink, "t"):
        env = gymnasium.make("CartPole-v1", max_episode_steps=10)
        env.reset(seed=0)
        played = 0
        for _ in range(25):  # 2 episodes of 10 steps (or fewer), then one cut off
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            played += 1
            if terminated or truncated:
                env.reset()
        # the script ends without closing its env: uninstall closes it
    assert sink.total_steps == played == 25
    finished, unfinished = emitter.finished(), emitter.unfinished()
    assert len(unfinished) == 1 and unfinished[0]["truncated"] is True
    assert sum(e["steps"] for e in emitter.episodes) == 25
    assert unfinished[0]["return"] == unfinished[0]["steps"]  # CartPole: 1 per step
    assert [e["index"] for e in emitter.episodes] == list(range(len(finished) + 1))
    assert sink.episodes == len(finished) and sink.unfinished == 1  # the unfinished rule
    assert sink.total_reward == sum(e["return"] for e in finished)  # not the unfinished one
    # each episode's last step is a step line, and step lines are numbered per episode
    for episode in finished:
        indices = [s[1] for s in emitter.steps if s[0] == episode["index"]]
        assert indices == list(range(episode["steps"]))
    assert gymnasium.make.__module__ == "gymnasium.envs.registration"  # restored


@pytest.mark.parametrize("vector_class", ["SyncVectorEnv", "AsyncVectorEnv"])
def test_vector_env_episodes_are_the_ones_the_script_sees_under_next_step_autoreset(
    vector_class: str,
) -> None:
    emitter = RecordingEmitter()
    sink = _sink(emitter, every=5)
    with Instrumentation(sink, "t"):
        cls = getattr(gymnasium.vector, vector_class)
        envs = cls([_short(7), _short(11), _short(5)])
        assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        seen, env_steps = _play(envs, 60)
    assert seen and _ours(emitter) == sorted(seen)
    # closed by the script: what ran on is unfinished, and the steps add up
    assert len(emitter.unfinished()) <= 3
    assert sum(e["steps"] for e in emitter.episodes) == env_steps < 180


def test_same_step_autoreset_is_counted_too() -> None:
    emitter = RecordingEmitter()
    with Instrumentation(_sink(emitter), "t"):
        envs = gymnasium.vector.SyncVectorEnv(
            [_short(4), _short(6)], autoreset_mode=AutoresetMode.SAME_STEP
        )
        seen, env_steps = _play(envs, 30)
    assert _ours(emitter) == sorted(seen)
    assert sum(e["steps"] for e in emitter.episodes) == env_steps == 60  # no reset steps


@pytest.mark.parametrize("mode", ["sync", "async", "vector_entry_point"])
def test_make_vec_in_every_mode(mode: str) -> None:
    emitter = RecordingEmitter()
    sink = _sink(emitter, every=3)
    with Instrumentation(sink, "t"):
        envs = gymnasium.make_vec(
            "CartPole-v1", num_envs=3, vectorization_mode=mode, max_episode_steps=9
        )
        if mode == "vector_entry_point":  # CartPole's own vector env: watched as a whole
            assert isinstance(envs.env, VectorEpisodeTelemetry)
        seen, env_steps = _play(envs, 40)
    assert seen and _ours(emitter) == sorted(seen)
    assert sink.total_steps == env_steps < 120  # the reset steps are not env steps
    assert sum(e["steps"] for e in emitter.episodes) == env_steps


def test_an_async_vector_env_left_open_reports_its_running_episodes() -> None:
    emitter = RecordingEmitter()
    with Instrumentation(_sink(emitter), "t"):
        envs = gymnasium.vector.AsyncVectorEnv([_short(500), _short(500)])
        envs.reset(seed=1)
        for _ in range(6):
            envs.step(np.array([0, 1]))
        # not closed: the end of the run asks the env subprocesses for their episodes
    assert emitter.finished() == [] or all(e["steps"] < 6 for e in emitter.finished())
    unfinished = emitter.unfinished()
    assert len(unfinished) == 2 and all(e["truncated"] for e in unfinished)
    assert sum(e["steps"] for e in emitter.episodes) == 12


def test_the_safe_point_is_passed_once_per_step_the_script_takes() -> None:
    calls: list[int] = []
    sink = _sink(RecordingEmitter())
    sink.safe_point = lambda: calls.append(sink.total_steps)
    with Instrumentation(sink, "t"):
        env = gymnasium.make("CartPole-v1")
        env.reset(seed=0)
        env.step(0)
        env.step(1)
        envs = gymnasium.vector.SyncVectorEnv([_short(50)] * 4)
        envs.reset(seed=0)
        envs.step(envs.action_space.sample())
    # before each step (the steps taken so far): 2 of the env, 1 of the 4-env vector env
    assert calls == [0, 1, 2]


def test_stop_at_the_safe_point_leaves_the_env_unstepped() -> None:
    class Stop(BaseException):
        pass

    sink = _sink(RecordingEmitter())
    with Instrumentation(sink, "t"):
        envs = gymnasium.make_vec("CartPole-v1", num_envs=2)
        envs.reset(seed=0)

        def stop() -> None:
            raise Stop

        sink.safe_point = stop
        with pytest.raises(Stop):
            envs.step(envs.action_space.sample())
    assert sink.total_steps == 0


class Frames:
    """A FastLane hook that records what it was given to wrap."""

    def __init__(self) -> None:
        self.wrapped: list[Any] = []

    def __call__(self, env: Any, run_id: str, settings: dict[str, Any]) -> Any:
        self.wrapped.append(env)
        return env


def test_frames_only_of_envs_that_render_rgb_array_unless_asked_for_all() -> None:
    frames = Frames()
    settings = {"video_mode": "single", "slot": 0, "grid_limit": 4}
    sink = _sink(RecordingEmitter())
    inst = Instrumentation(sink, "t", fastlane_settings=settings, fastlane_hook=frames,
                           render_frames=False)  # fmt: skip
    with inst:
        plain = gymnasium.make("CartPole-v1")
        rendering = gymnasium.make("CartPole-v1", render_mode="rgb_array")
        vector = gymnasium.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
                                    render_mode="rgb_array")  # fmt: skip
    assert plain.render_mode is None
    assert [getattr(e, "render_mode", None) for e in frames.wrapped] == ["rgb_array"] * 2
    assert frames.wrapped[0].unwrapped is rendering.unwrapped
    assert len(frames.wrapped) == 2 and vector is not None
    frames.wrapped.clear()
    with Instrumentation(sink, "t", fastlane_settings=settings, fastlane_hook=frames):
        forced = gymnasium.make("CartPole-v1")  # frames asked for: it renders rgb_array
    assert forced.render_mode == "rgb_array" and len(frames.wrapped) == 1


def test_an_env_the_script_closed_is_closed_once() -> None:
    closes: list[int] = []

    class Counting(gymnasium.Wrapper):  # type: ignore[type-arg]
        def close(self) -> None:
            closes.append(1)
            super().close()

    sink = _sink(RecordingEmitter())
    inst = Instrumentation(sink, "t").install()
    try:
        env = gymnasium.make("CartPole-v1")
        env.unwrapped.close = lambda: closes.append(0)  # type: ignore[method-assign]
        env = Counting(env)
        env.reset(seed=0)
        env.step(0)
        env.close()
        env.close()  # twice by the script: the env beneath still once
    finally:
        inst.uninstall()  # and not again at the end
    assert closes.count(0) == 1 and sink.unfinished == 1


class Counter(gymnasium.vector.VectorEnv):  # type: ignore[type-arg]
    """A vector env of its own, as a library writes one: only reset and step."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 2, **kwargs: Any) -> None:
        self.num_envs = num_envs
        self.single_observation_space = gymnasium.spaces.Box(0, 10, (1,))
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.observation_space = gymnasium.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)

    def reset(self, **kwargs: Any) -> Any:
        return np.zeros((self.num_envs, 1), np.float32), {}

    def step(self, actions: Any) -> Any:
        n = self.num_envs
        return np.zeros((n, 1), np.float32), np.ones(n), np.zeros(n, bool), np.zeros(n, bool), {}


def test_a_hurried_end_closes_every_kind_of_vector_env_without_complaint() -> None:
    gymnasium.register("CounterOnly-v0", vector_entry_point=Counter)
    said: list[str] = []
    emitter = RecordingEmitter()
    inst = Instrumentation(_sink(emitter), "t", log=said.append).install()
    made = [
        gymnasium.make_vec("CounterOnly-v0", num_envs=2),  # its close takes no terminate=
        gymnasium.vector.SyncVectorEnv([_short(50)] * 2),
        gymnasium.vector.AsyncVectorEnv([_short(50)] * 2),
    ]
    for envs in made:
        envs.reset(seed=0)
        envs.step(envs.action_space.sample())
    inst.uninstall(hurry=True)  # the run was cancelled: an async env may be mid-step
    assert said == []
    assert all(envs.closed for envs in made)
    # the async env's subprocesses were ended, not asked: its episodes go unreported
    assert len(emitter.unfinished()) == 4
