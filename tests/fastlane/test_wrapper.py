"""The gymnasium wrappers, the environment variables, the built-in plugin and tiling."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pluggy
import pytest
from gymnasium.utils.env_checker import check_env

from mosaic_sdk import hookspecs
from mosaic_sdk.fastlane import (
    FastLaneConfig,
    FastLaneReader,
    FastLaneTelemetryWrapper,
    FastLaneUnavailableError,
    FastLaneVectorTelemetryWrapper,
    FastLaneWriter,
    apply_fastlane_environment,
    read_fastlane_environment,
    tile_frames,
)
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.fastlane.segment import inspect_segment
from mosaic_sdk.plugins import fastlane_provider as fastlane_plugin
from mosaic_sdk.plugins import maybe_wrap_env


class CountingEnv(gymnasium.Env):
    """Reward 1 per step, episodes of 5 steps; render() paints the step count and the env tag."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode=None, tag=0, size=(12, 16)):
        self.render_mode = render_mode
        self.tag = tag
        self.size = size
        self.observation_space = gymnasium.spaces.Box(0.0, 10.0, (1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.t = 0
        self.renders = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= 5, False, {}

    def render(self):
        self.renders += 1
        frame = np.zeros((*self.size, 3), np.uint8)
        frame[..., 0] = self.t
        frame[..., 1] = self.tag
        return frame


def test_wrapped_env_passes_check_env_and_close_removes_the_segment(run_id):
    env = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, interval_ms=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # check_env notes that the env is wrapped
        check_env(env, skip_render_check=False)
    assert inspect_segment(segment_name(run_id)) is not None
    env.close()
    assert inspect_segment(segment_name(run_id)) is None


def test_frames_and_honest_hud_numbers(run_id):
    env = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, interval_ms=0)
    try:
        env.reset(seed=1)
        reader = FastLaneReader.attach(run_id)
        assert reader.latest_frame().array()[0, 0, 0] == 0  # published at reset
        for _ in range(3):
            env.step(0)
        got = reader.latest_frame()
        assert got.array()[0, 0, 0] == 3
        assert got.metrics.last_reward == 1.0
        assert got.metrics.rolling_return == 3.0  # no episode finished: return so far
        assert got.metrics.step_rate_hz > 0
        for _ in range(2):
            env.step(0)  # episode of 5 ends
        env.reset()
        env.step(0)
        got = reader.latest_frame()
        assert got.metrics.rolling_return == 5.0  # mean of completed episodes
        reader.close()
    finally:
        env.close()


def test_throttle_skips_render_itself(run_id):
    inner = CountingEnv("rgb_array")
    env = FastLaneTelemetryWrapper(inner, run_id, interval_ms=60_000)
    try:
        env.reset(seed=0)
        for _ in range(20):
            env.step(1)
        assert inner.renders == 1 and env.pump.frames_published == 1
    finally:
        env.close()


def test_max_dim_downscales(run_id):
    env = FastLaneTelemetryWrapper(
        CountingEnv("rgb_array", size=(60, 100)), run_id, interval_ms=0, max_dim=32
    )
    try:
        env.reset(seed=0)
        with FastLaneReader.attach(run_id) as reader:
            got = reader.latest_frame()
            assert max(got.width, got.height) <= 32 and (got.width, got.height) == (25, 15)
    finally:
        env.close()


def test_env_without_rgb_array_rendering_warns_and_publishes_nothing(run_id):
    with pytest.warns(RuntimeWarning, match="render_mode"):
        env = FastLaneTelemetryWrapper(CountingEnv(None), run_id, interval_ms=0)
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(FastLaneUnavailableError):
        FastLaneReader.attach(run_id)
    env.close()


def make_vector(n: int) -> gymnasium.vector.SyncVectorEnv:
    return gymnasium.vector.SyncVectorEnv(
        [lambda i=i: CountingEnv("rgb_array", tag=i, size=(4, 6)) for i in range(n)]
    )


def test_vector_single_mode_publishes_the_slot_env(run_id):
    env = FastLaneVectorTelemetryWrapper(make_vector(3), run_id, slot=2, interval_ms=0)
    try:
        env.reset(seed=0)
        env.step(np.zeros(3, np.int64))
        with FastLaneReader.attach(run_id) as reader:
            got = reader.latest_frame()
            assert got.array().shape == (4, 6, 3) and got.array()[0, 0, 1] == 2
            assert got.metrics.last_reward == 1.0
        assert [e.renders for e in env.env.envs] == [0, 0, 2]  # only the probe env renders
    finally:
        env.close()
    assert inspect_segment(segment_name(run_id)) is None


@pytest.mark.parametrize(
    "n, limit, shape, env1_at", [(3, 4, (8, 12, 3), (0, 6)), (5, 2, (8, 6, 3), (4, 0))]
)
def test_vector_grid_mode_tiles_up_to_grid_limit(run_id, n, limit, shape, env1_at):
    env = FastLaneVectorTelemetryWrapper(
        make_vector(n), run_id, video_mode="grid", grid_limit=limit, interval_ms=0
    )
    try:
        env.reset(seed=0)
        with FastLaneReader.attach(run_id) as reader:
            image = reader.latest_frame().array()
        assert image.shape == shape
        assert image[0, 0, 1] == 0 and image[env1_at][1] == 1
        if n == 3:
            assert image[4, 0, 1] == 2 and (image[4:, 6:] == 0).all()  # zero padding
    finally:
        env.close()


def test_video_mode_off_publishes_nothing(run_id):
    env = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, video_mode="off")
    env.reset(seed=0)
    env.step(0)
    assert env.unwrapped.renders == 0
    env.close()


def test_apply_and_read_environment_both_spellings():
    env = apply_fastlane_environment(
        {}, fastlane_only=True, fastlane_slot=2, video_mode="GRID", grid_limit=6
    )
    for prefix in ("MOSAIC_FASTLANE_", "GYM_GUI_FASTLANE_"):
        assert env[prefix + "ONLY"] == "1" and env[prefix + "SLOT"] == "2"
        assert env[prefix + "VIDEO_MODE"] == "grid" and env[prefix + "GRID_LIMIT"] == "6"
    assert env["MOSAIC_FASTLANE"] == "1"
    settings = read_fastlane_environment(env)
    assert (settings.enabled, settings.fastlane_only, settings.slot) == (True, True, 2)
    gym_gui_only = {
        "GYM_GUI_FASTLANE_ONLY": "1",
        "GYM_GUI_FASTLANE_VIDEO_MODE": "grid",
        "GYM_GUI_FASTLANE_GRID_LIMIT": "9",
        "CLEANRL_FASTLANE_MAX_DIM": "64",
    }
    s = read_fastlane_environment(gym_gui_only)
    assert (s.enabled, s.video_mode, s.grid_limit, s.max_dim) == (True, "grid", 9, 64)
    assert not read_fastlane_environment({}).enabled
    assert not read_fastlane_environment(
        {"MOSAIC_FASTLANE": "1", "MOSAIC_FASTLANE_VIDEO_MODE": "off"}
    ).enabled
    off = apply_fastlane_environment({}, fastlane_only=False, fastlane_slot=0, video_mode="off")
    assert off["MOSAIC_FASTLANE"] == "0"
    with pytest.raises(ValueError, match="MOSAIC_FASTLANE_SLOT='x'"):
        read_fastlane_environment({"MOSAIC_FASTLANE_SLOT": "x"})
    with pytest.raises(ValueError, match="video_mode"):
        apply_fastlane_environment({}, fastlane_only=True, fastlane_slot=0, video_mode="tv")


def test_maybe_wrap_env(run_id):
    bare = CountingEnv("rgb_array")
    assert maybe_wrap_env(bare, run_id, environ={}) is bare
    on = {"MOSAIC_FASTLANE": "1", "MOSAIC_RUN_ID": run_id, "MOSAIC_FASTLANE_INTERVAL_MS": "0"}
    env = maybe_wrap_env(CountingEnv("rgb_array"), environ=on)
    assert isinstance(env, FastLaneTelemetryWrapper) and env.pump.interval_s == 0
    env.reset(seed=0)
    with FastLaneReader.attach(run_id) as reader:
        assert reader.latest_frame() is not None
    env.close()
    vec = maybe_wrap_env(make_vector(2), environ=on)
    assert isinstance(vec, FastLaneVectorTelemetryWrapper)
    vec.close()
    with pytest.raises(ValueError, match="MOSAIC_RUN_ID"):
        maybe_wrap_env(bare, environ={"MOSAIC_FASTLANE_ONLY": "1"})
    forced = maybe_wrap_env(CountingEnv("rgb_array"), run_id, force=True, environ={})
    assert isinstance(forced, FastLaneTelemetryWrapper)
    forced.close()


def test_plugin_provides_the_wrap_hook_and_the_cleanup(run_id):
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(fastlane_plugin)
    env = pm.hook.mosaic_fastlane_wrap_env(
        env=CountingEnv("rgb_array"),
        run_id=run_id,
        settings={
            "video_mode": "single",
            "slot": 0,
            "grid_limit": 4,
            "interval_ms": 0,
            "max_dim": 0,
        },
    )
    assert isinstance(env, FastLaneTelemetryWrapper)
    env.close()
    writer = FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2))
    writer.close()  # closed without unlink: invalidated, so stale
    assert inspect_segment(segment_name(run_id)) is not None
    pm.hook.mosaic_run_cleanup(run_id=run_id, worker="w", run_dir=None, exit_code=-9)
    assert inspect_segment(segment_name(run_id)) is None


def test_tile_frames_near_square_grid_with_zero_padding():
    frames = [np.full((2, 3, 3), i + 1, np.uint8) for i in range(5)]
    out = tile_frames(frames)  # rows = ceil(sqrt(5)) = 3, cols = ceil(5 / 3) = 2
    assert out.shape == (6, 6, 3)
    assert out[0, 0, 0] == 1 and out[0, 3, 0] == 2 and out[4, 0, 0] == 5
    assert (out[4:, 3:] == 0).all()
    assert tile_frames(frames[:1]).shape == (2, 3, 3)
    assert tile_frames(frames[:2]).shape == (4, 3, 3)  # rows 2, cols 1
    assert tile_frames([np.zeros((2, 2), np.uint8)] * 4).shape == (4, 4)
    with pytest.raises(ValueError, match="at least one"):
        tile_frames([])
    with pytest.raises(ValueError, match="must match"):
        tile_frames([np.zeros((2, 2, 3), np.uint8), np.zeros((3, 2, 3), np.uint8)])


def test_importing_fastlane_does_not_import_gymnasium_or_pluggy():
    code = (
        "import sys, mosaic_sdk.fastlane; "
        "print('gymnasium' in sys.modules, 'pluggy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_several_wrapped_envs_of_one_run_publish_only_the_slot_env(run_id):
    envs = [
        FastLaneTelemetryWrapper(CountingEnv("rgb_array", tag=i), run_id, slot=1, interval_ms=0)
        for i in range(3)
    ]
    try:
        assert [e.env_index for e in envs] == [0, 1, 2]
        for e in envs:
            e.reset(seed=0)
            e.step(0)
        assert [e.unwrapped.renders for e in envs] == [0, 2, 0]
        with FastLaneReader.attach(run_id) as reader:
            assert reader.latest_frame().array()[0, 0, 1] == 1
        envs[1].close()
        again = FastLaneTelemetryWrapper(
            CountingEnv("rgb_array", tag=7), run_id, slot=1, interval_ms=0
        )
        assert again.env_index == 1  # the freed index is reused
        again.reset(seed=0)
        with FastLaneReader.attach(run_id) as reader:
            assert reader.latest_frame().array()[0, 0, 1] == 7
        again.close()
    finally:
        for e in envs:
            e.close()


def test_publishing_failures_warn_and_never_stop_the_env(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)):
        env = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, interval_ms=0)
        with pytest.warns(RuntimeWarning, match="live writer"):
            env.reset(seed=0)
        env.step(0)  # keeps working, publishes nothing
        env.close()

    class FloatEnv(CountingEnv):
        def render(self):
            return np.zeros((4, 4, 3), np.float32)

    env = FastLaneTelemetryWrapper(FloatEnv("rgb_array"), run_id, interval_ms=0)
    with pytest.warns(RuntimeWarning, match="uint8"):
        env.reset(seed=0)
    env.step(0)
    env.close()
