"""FastLane renders without a display: SDL gets its dummy video driver, so a toy-text run's log
no longer holds pygame's ``XDG_RUNTIME_DIR is invalid or not set`` line (issue 26)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from mosaic_sdk.fastlane.environment import use_headless_video
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink


def test_no_display_gets_the_dummy_driver() -> None:
    env: dict[str, str] = {"PATH": "/usr/bin"}
    assert use_headless_video(env) is True and env["SDL_VIDEODRIVER"] == "dummy"


@pytest.mark.parametrize(
    "given",
    [{"DISPLAY": ":0"}, {"WAYLAND_DISPLAY": "wayland-0"}, {"SDL_VIDEODRIVER": "x11"}],
)
def test_a_desktop_or_a_chosen_driver_is_left_alone(given: dict[str, str]) -> None:
    env = dict(given)
    assert use_headless_video(env) is False and env == given


SCRIPT = """
import sys
import gymnasium
from mosaic_sdk.fastlane import FastLaneReader, FastLaneTelemetryWrapper

env = FastLaneTelemetryWrapper(
    gymnasium.make("FrozenLake-v1", render_mode="rgb_array"), sys.argv[1], interval_ms=0
)
env.reset(seed=1)
for _ in range(3):
    env.step(env.action_space.sample())
reader = FastLaneReader.attach(sys.argv[1])
print(reader.head)
reader.close()
env.close()
"""


def test_fastlane_frames_of_a_toy_text_env_write_no_sdl_line() -> None:
    pytest.importorskip("pygame", reason="gymnasium's toy-text rendering")
    run_id = f"headless-{uuid.uuid4().hex[:8]}"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, run_id],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shm_unlink(segment_name(run_id))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 4  # the frames were rendered (reset and 3 steps)
    assert "XDG_RUNTIME_DIR" not in done.stderr, done.stderr
