"""RecordVideo under the worker: left alone with moviepy, a warning pass-through without."""

from __future__ import annotations

import importlib.util
import sys

import gymnasium
import pytest
from mosaic_worker_cleanrl.upstream_video import VIDEO_INSTALL, skip_recording, video_available


def test_without_moviepy_record_video_passes_the_env_through_and_warns_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "moviepy", None)  # as on a Python without it
    assert not video_available()
    original = gymnasium.wrappers.RecordVideo
    said: list[str] = []
    restore = skip_recording(said.append)
    try:
        env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
        wrapped = gymnasium.wrappers.RecordVideo(env, "videos/run-eval")
        again = gymnasium.wrappers.RecordVideo(gymnasium.make("CartPole-v1"), "videos/other")
        assert wrapped.env is env and isinstance(wrapped, gymnasium.Wrapper)
        obs, _ = wrapped.reset(seed=0)
        assert wrapped.step(wrapped.action_space.sample())[0].shape == obs.shape
        wrapped.close()
        again.close()
    finally:
        restore()
    assert gymnasium.wrappers.RecordVideo is original
    assert said == [
        "warning: videos were not recorded (into videos/run-eval): moviepy is not installed; "
        f"the run goes on without them ({VIDEO_INSTALL} records them)"
    ]


@pytest.mark.skipif(importlib.util.find_spec("moviepy") is None, reason="needs moviepy")
def test_with_moviepy_record_video_is_left_alone() -> None:
    original = gymnasium.wrappers.RecordVideo
    said: list[str] = []
    restore = skip_recording(said.append)
    assert gymnasium.wrappers.RecordVideo is original
    restore()
    assert gymnasium.wrappers.RecordVideo is original and said == []
