"""Gymnasium wrappers that publish ``render()`` frames to FastLane (imported lazily)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mosaic_sdk.fastlane.environment import (
    DEFAULT_GRID_LIMIT,
    DEFAULT_INTERVAL_MS,
    VIDEO_MODES,
    use_headless_video,
)
from mosaic_sdk.fastlane.pump import FramePump
from mosaic_sdk.fastlane.turns import is_aec_env, wrap_aec_env

_SETTING_KEYS = {"video_mode", "slot", "grid_limit", "interval_ms", "max_dim"}


def _check_mode(video_mode: str) -> str:
    mode = str(video_mode).lower()
    if mode not in VIDEO_MODES:
        raise ValueError(f"FastLane video_mode must be one of {VIDEO_MODES}, got {video_mode!r}")
    return mode


# Indices of the live single-env wrappers of each run in this process. A worker that wraps
# every env it makes (the CleanRL shim patches ``gymnasium.make``) gets indices 0, 1, ...;
# only the wrapper whose index equals ``slot`` publishes. A closed wrapper frees its index.
_ENV_INDICES: dict[str, set[int]] = {}


def _take_index(run_id: str) -> int:
    taken = _ENV_INDICES.setdefault(run_id, set())
    index = next(i for i in range(len(taken) + 1) if i not in taken)
    taken.add(index)
    return index


def _free_index(run_id: str, index: int) -> None:
    taken = _ENV_INDICES.get(run_id, set())
    taken.discard(index)
    if not taken:
        _ENV_INDICES.pop(run_id, None)


class PendingFrames:
    """The pending-frame methods both wrappers share (see the module docstring)."""

    pump: FramePump

    def _setup(
        self, run_id: str, video_mode: str, interval_ms: float, max_dim: int, return_window: int
    ) -> None:
        use_headless_video()  # before the first render starts SDL (see its docstring)
        self.video_mode = _check_mode(video_mode)
        self.pump = FramePump(
            run_id, interval_ms=interval_ms, max_dim=max_dim, return_window=return_window
        )

    def _shows_frames(self) -> bool:
        raise NotImplementedError

    def _render_for_fastlane(self) -> Any:
        raise NotImplementedError

    def _maybe_publish(self) -> None:
        if self._shows_frames():
            self.pump.offer(self._render_for_fastlane)

    @property
    def frame_pending(self) -> bool:
        """True when the current state's frame was skipped by the interval (not published)."""
        return self._shows_frames() and self.pump.pending

    def publish_pending_frame(self) -> bool:
        """Render and publish the current state now if its frame is pending, whatever the
        interval; True when a frame was published."""
        return self._shows_frames() and self.pump.publish_pending(self._render_for_fastlane)

    def pending_frame_due_in(self) -> float | None:
        """Seconds until the interval allows the pending frame (0.0: now); ``None`` when no
        frame is pending."""
        return self.pump.seconds_until_due() if self.frame_pending else None


class FastLaneTelemetryWrapper(
    PendingFrames,
    gymnasium.Wrapper,  # type: ignore[type-arg]
    gymnasium.utils.RecordConstructorArgs,
):
    """Publishes frames of a single env (make it with ``render_mode="rgb_array"``).

    When a process wraps several envs for the same run, each wrapper takes the lowest free
    index (``env_index``) and only the one whose index equals ``slot`` publishes; the others
    pass everything through untouched. ``grid`` mode needs a vector env
    (:class:`FastLaneVectorTelemetryWrapper`); on a single env it behaves like ``single``.
    """

    def __init__(
        self,
        env: gymnasium.Env,  # type: ignore[type-arg]
        run_id: str,
        *,
        video_mode: str = "single",
        slot: int = 0,
        grid_limit: int = DEFAULT_GRID_LIMIT,
        interval_ms: float = DEFAULT_INTERVAL_MS,
        max_dim: int = 0,
        return_window: int = 10,
    ) -> None:
        # Recorded so that env.spec (read by check_env and gymnasium.make(spec)) describes us.
        gymnasium.utils.RecordConstructorArgs.__init__(
            self,
            run_id=run_id,
            video_mode=video_mode,
            slot=slot,
            grid_limit=grid_limit,
            interval_ms=interval_ms,
            max_dim=max_dim,
            return_window=return_window,
        )
        super().__init__(env)
        self._setup(run_id, video_mode, interval_ms, max_dim, return_window)
        if slot < 0:
            raise ValueError(f"FastLane slot must be >= 0, got {slot}")
        self.run_id = run_id
        self.env_index: int | None = _take_index(run_id)
        self.publishing = self.video_mode != "off" and self.env_index == slot
        if self.publishing and env.render_mode != "rgb_array":
            self.pump.disable(f"the env's render_mode is {env.render_mode!r}, not 'rgb_array'")

    def reset(self, **kwargs: Any) -> Any:
        result = self.env.reset(**kwargs)
        self._maybe_publish()
        return result

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.publishing:
            self.pump.record_step(float(reward), bool(terminated or truncated))
            self._maybe_publish()
        return obs, reward, terminated, truncated, info

    def _shows_frames(self) -> bool:
        return self.publishing

    def _render_for_fastlane(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.pump.close()
            if self.env_index is not None:
                _free_index(self.run_id, self.env_index)
                self.env_index = None


class FastLaneVectorTelemetryWrapper(PendingFrames, VectorWrapper):
    """Publishes frames of a vector env: the ``slot`` env, or a grid of the first envs."""

    def __init__(
        self,
        env: VectorEnv,  # type: ignore[type-arg]
        run_id: str,
        *,
        video_mode: str = "single",
        slot: int = 0,
        grid_limit: int = DEFAULT_GRID_LIMIT,
        interval_ms: float = DEFAULT_INTERVAL_MS,
        max_dim: int = 0,
        return_window: int = 10,
    ) -> None:
        super().__init__(env)
        self._setup(run_id, video_mode, interval_ms, max_dim, return_window)
        if not 0 <= slot < env.num_envs:
            raise ValueError(
                f"FastLane slot {slot} is outside the vector env's {env.num_envs} envs"
            )
        if grid_limit < 1:
            raise ValueError(f"FastLane grid_limit must be >= 1, got {grid_limit}")
        self.slot = slot
        self.grid_limit = grid_limit
        if self.video_mode != "off" and env.render_mode != "rgb_array":
            self.pump.disable(f"the env's render_mode is {env.render_mode!r}, not 'rgb_array'")

    def reset(self, **kwargs: Any) -> Any:
        result = self.env.reset(**kwargs)
        self._maybe_publish()
        return result

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        done = bool(np.asarray(terminations)[self.slot] or np.asarray(truncations)[self.slot])
        self.pump.record_step(float(np.asarray(rewards)[self.slot]), done, self.num_envs)
        self._maybe_publish()
        return obs, rewards, terminations, truncations, infos

    def _render_for_fastlane(self) -> Any:
        envs = getattr(self.env.unwrapped, "envs", None)  # SyncVectorEnv: render only what we show
        if self.video_mode == "single":
            if envs is not None:
                return envs[self.slot].render()
            rendered: Any = self.env.render()
            return None if rendered is None else rendered[self.slot]
        count = min(self.grid_limit, self.num_envs)
        frames: list[Any] | None
        if envs is not None:
            frames = [e.render() for e in envs[:count]]
        else:
            rendered = self.env.render()
            frames = None if rendered is None else list(rendered)[:count]
        return None if frames is None or any(f is None for f in frames) else frames

    def _shows_frames(self) -> bool:
        return self.video_mode != "off"

    def close(self, **kwargs: Any) -> None:
        try:
            self.env.close(**kwargs)
        finally:
            self.pump.close()


def wrap_env(env: Any, run_id: str, settings: dict[str, Any]) -> Any:
    """Wrap ``env`` (single, vector, or a turn-based PettingZoo AEC env) per ``settings``
    (the hook's settings dict)."""
    unknown = set(settings) - _SETTING_KEYS
    if unknown:
        raise ValueError(
            f"unknown FastLane settings {sorted(unknown)}; known: {sorted(_SETTING_KEYS)}"
        )
    options = {k: settings[k] for k in _SETTING_KEYS if settings.get(k) is not None}
    if is_aec_env(env):
        return wrap_aec_env(env, run_id, options)
    if isinstance(env, VectorEnv):
        return FastLaneVectorTelemetryWrapper(env, run_id, **options)
    return FastLaneTelemetryWrapper(env, run_id, **options)
