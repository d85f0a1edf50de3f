"""The part of the FastLane wrapper that is not gymnasium: throttling, HUD numbers, publishing."""

from __future__ import annotations

import math
import time
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from mosaic_sdk.fastlane.records import (
    FastLaneBusyError,
    FastLaneConfig,
    FastLaneError,
    FastLaneMetrics,
)
from mosaic_sdk.fastlane.tiling import tile_frames
from mosaic_sdk.fastlane.writer import FastLaneWriter


def downscale(frame: np.ndarray, max_dim: int) -> np.ndarray:
    """Nearest-neighbour decimation by the smallest integer factor that brings both sides to at
    most ``max_dim`` pixels (0 = leave as is)."""
    if max_dim <= 0:
        return frame
    factor = math.ceil(max(frame.shape[0], frame.shape[1]) / max_dim)
    return frame if factor <= 1 else frame[::factor, ::factor]


class FramePump:
    """Decides when to render, computes the HUD metrics and owns the run's writer."""

    def __init__(
        self,
        run_id: str,
        *,
        interval_ms: float = 16.0,
        max_dim: int = 0,
        return_window: int = 10,
        rate_window_s: float = 0.5,
        capacity: int | None = None,
    ) -> None:
        self.run_id = run_id
        self.interval_s = max(0.0, float(interval_ms)) / 1000.0
        self.max_dim = int(max_dim)
        self.rate_window_s = rate_window_s
        self._capacity = capacity
        self.writer: FastLaneWriter | None = None
        self._next_due = 0.0
        self.returns: deque[float] = deque(maxlen=max(1, return_window))
        self.episode_return = 0.0
        self.last_reward = 0.0
        self.step_rate_hz = 0.0
        self._first_step: float | None = None
        self._window_start = 0.0
        self._window_steps = 0
        self.frames_published = 0
        self.disabled_reason: str | None = None
        #: True while the newest state's frame was skipped by the interval (not published).
        self.pending = False

    # -- statistics ----------------------------------------------------------------------
    def record_step(self, reward: float, episode_over: bool, env_steps: int = 1) -> None:
        now = time.monotonic()
        if self._first_step is None:
            self._first_step = self._window_start = now
        self._window_steps += env_steps
        elapsed = now - self._window_start
        if elapsed >= self.rate_window_s:
            self.step_rate_hz = self._window_steps / elapsed
            self._window_start, self._window_steps = now, 0
        elif self._window_start == self._first_step and elapsed > 0:
            self.step_rate_hz = self._window_steps / elapsed
        self.last_reward = float(reward)
        self.episode_return += float(reward)
        if episode_over:
            self.returns.append(self.episode_return)
            self.episode_return = 0.0

    @property
    def rolling_return(self) -> float:
        return float(sum(self.returns) / len(self.returns)) if self.returns else self.episode_return

    def metrics(self) -> FastLaneMetrics:
        return FastLaneMetrics(self.last_reward, self.rolling_return, self.step_rate_hz)

    # -- publishing ----------------------------------------------------------------------
    def offer(self, render: Callable[[], Any]) -> bool:
        """A new state to show: publish ``render()`` when a frame is due, else mark the frame
        pending (``render`` is not called). True when a frame was published."""
        if self.disabled_reason is not None:
            return False
        if time.monotonic() >= self._next_due:
            self.publish(render())
            return True
        self.pending = True
        return False

    def publish_pending(self, render: Callable[[], Any]) -> bool:
        """Publish ``render()`` now, whatever the interval, if a frame is pending; True when
        one was published (publishing clears ``pending``)."""
        if not self.pending or self.disabled_reason is not None:
            return False
        self.publish(render())
        return True

    def seconds_until_due(self) -> float:
        """Seconds until the interval allows the next frame (0.0: now)."""
        return max(0.0, self._next_due - time.monotonic())

    def disable(self, reason: str) -> None:
        self.pending = False
        if self.disabled_reason is None:
            self.disabled_reason = reason
            warnings.warn(
                f"FastLane publishing disabled for run {self.run_id!r}: {reason}",
                RuntimeWarning,
                stacklevel=3,
            )

    def publish(self, frame: Any) -> None:
        """Publish one rendered frame (a single HxWxC array, or a list of them to tile)."""
        self._next_due = time.monotonic() + self.interval_s
        self.pending = False
        if isinstance(frame, (list, tuple)):
            frame = tile_frames(frame)
        if frame is None:
            self.disable("render() returned None; create the env with render_mode='rgb_array'")
            return
        frame = downscale(np.asarray(frame), self.max_dim)
        try:  # a viewer feature never stops training: a failure disables it with one warning
            if self.writer is None:
                kwargs = {} if self._capacity is None else {"capacity": self._capacity}
                self.writer = FastLaneWriter.create(
                    self.run_id, FastLaneConfig.for_array(frame, **kwargs)
                )
            self.writer.publish(frame, metrics=self.metrics())
        except FastLaneBusyError as exc:
            self.disable(f"{exc} (this env does not publish)")
            return
        except (FastLaneError, OSError, TypeError, ValueError) as exc:
            self.disable(f"cannot publish a frame of shape {frame.shape} {frame.dtype}: {exc}")
            return
        self.frames_published += 1

    def close(self) -> None:
        """Invalidate and remove the run's segment."""
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.unlink()
            writer.close()
