"""Pending frames: a step the interval skipped is remembered, and published on request.

The interval is an hour in these tests, so nothing depends on the clock: after the first
frame, only ``publish_pending_frame()`` publishes.
"""

from __future__ import annotations

import gymnasium
import numpy as np

from mosaic_sdk.fastlane import (
    FastLaneReader,
    FastLaneTelemetryWrapper,
    FastLaneVectorTelemetryWrapper,
)
from tests.fastlane.test_wrapper import CountingEnv

HOUR_MS = 3_600_000.0


def newest_step_count(run_id: str) -> tuple[int, int]:
    """(frames in the ring, the step count painted in the newest frame's red channel)."""
    reader = FastLaneReader.attach(run_id)
    try:
        frame = reader.latest_frame()
        assert frame is not None
        return frame.seq, int(frame.array()[0, 0, 0])
    finally:
        reader.close()


def test_a_skipped_step_is_pending_until_published(run_id):
    inner = CountingEnv("rgb_array")
    env = FastLaneTelemetryWrapper(inner, run_id, interval_ms=HOUR_MS)
    try:
        env.reset(seed=0)
        assert not env.frame_pending and env.pending_frame_due_in() is None
        assert newest_step_count(run_id) == (1, 0)  # the reset's frame: the first is due
        for _ in range(3):
            env.step(0)
        assert env.frame_pending and inner.renders == 1  # skipped steps render nothing
        assert env.pending_frame_due_in() > 0  # the hour has not passed
        assert newest_step_count(run_id) == (1, 0)  # the segment still shows the reset
        assert env.publish_pending_frame() is True
        assert newest_step_count(run_id) == (2, 3)  # the newest state, now
        assert not env.frame_pending and env.pending_frame_due_in() is None
        assert env.publish_pending_frame() is False  # nothing pending: no render, no frame
        assert inner.renders == 2 and env.pump.frames_published == 2
    finally:
        env.close()


def test_without_an_interval_nothing_is_ever_pending(run_id):
    env = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, interval_ms=0)
    try:
        env.reset(seed=0)
        for _ in range(4):
            env.step(0)
            assert not env.frame_pending and env.pending_frame_due_in() is None
        assert env.publish_pending_frame() is False
        assert newest_step_count(run_id) == (5, 4)
    finally:
        env.close()


def test_an_env_that_does_not_publish_has_nothing_pending(make_run_id):
    run_id = make_run_id()
    shown = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, interval_ms=HOUR_MS)
    other = FastLaneTelemetryWrapper(CountingEnv("rgb_array"), run_id, interval_ms=HOUR_MS)
    off = FastLaneTelemetryWrapper(
        CountingEnv("rgb_array"), make_run_id(), interval_ms=HOUR_MS, video_mode="off"
    )
    try:
        for env in (shown, other, off):
            env.reset(seed=0)
            env.step(0)
        assert shown.frame_pending
        assert other.env_index == 1 and not other.frame_pending  # not the slot env
        assert not off.frame_pending and off.publish_pending_frame() is False
        assert other.unwrapped.renders == 0 and off.unwrapped.renders == 0
    finally:
        for env in (shown, other, off):
            env.close()


def test_a_disabled_pump_has_nothing_pending(run_id):
    import warnings

    inner = CountingEnv("rgb_array")
    env = FastLaneTelemetryWrapper(inner, run_id, interval_ms=HOUR_MS)
    inner.render = lambda: None  # type: ignore[method-assign]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            env.reset(seed=0)  # render() gives None: publishing is disabled with a warning
        env.step(0)
        assert env.pump.disabled_reason is not None
        assert not env.frame_pending and env.publish_pending_frame() is False
    finally:
        env.close()


def test_vector_wrapper_publishes_the_pending_slot_frame(run_id):
    envs = gymnasium.vector.SyncVectorEnv(
        [lambda tag=tag: CountingEnv("rgb_array", tag=tag) for tag in range(3)]
    )
    env = FastLaneVectorTelemetryWrapper(envs, run_id, slot=2, interval_ms=HOUR_MS)
    try:
        env.reset(seed=0)
        for _ in range(2):
            env.step(np.zeros(3, dtype=np.int64))
        assert env.frame_pending and env.pending_frame_due_in() > 0
        assert newest_step_count(run_id) == (1, 0)
        assert env.publish_pending_frame() is True
        assert newest_step_count(run_id) == (2, 2)
        reader = FastLaneReader.attach(run_id)
        try:
            assert reader.latest_frame().array()[0, 0, 1] == 2  # env 2's frame (its tag)
        finally:
            reader.close()
        assert not env.frame_pending and env.publish_pending_frame() is False
    finally:
        env.close()
