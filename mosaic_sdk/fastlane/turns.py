"""FastLane for turn-based games: a wrapper of a PettingZoo AEC env that publishes its board."""

from __future__ import annotations

from typing import Any

from mosaic_sdk.fastlane.environment import (
    DEFAULT_INTERVAL_MS,
    VIDEO_MODES,
    use_headless_video,
)
from mosaic_sdk.fastlane.pump import FramePump
from mosaic_sdk.fastlane.writer import agent_stream_id

#: The attributes that tell an AEC env (agents in turn) from a gymnasium env.
_AEC_ATTRIBUTES = ("agent_iter", "possible_agents", "last", "observe")


def is_aec_env(env: Any) -> bool:
    """True for an env of PettingZoo's AEC API (agents acting in turn)."""
    return all(hasattr(env, name) for name in _AEC_ATTRIBUTES)


class _Render:
    """One state's frame, rendered on first demand and shared by every stream."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.frame: Any = None
        self.done = False

    def __call__(self) -> Any:
        if not self.done:
            self.frame, self.done = self.env.render(), True
        return self.frame


class FastLaneAECWrapper:
    """Publishes the board of a turn-based (PettingZoo AEC) env to FastLane; see the module
    docstring. ``publishing`` is False in video mode ``off``."""

    def __init__(
        self,
        env: Any,
        run_id: str,
        *,
        video_mode: str = "single",
        slot: int = 0,
        grid_limit: int = 1,
        interval_ms: float = DEFAULT_INTERVAL_MS,
        max_dim: int = 0,
        return_window: int = 10,
    ) -> None:
        # slot and grid_limit choose among the envs of a vector env: one board here.
        del slot, grid_limit
        mode = str(video_mode).lower()
        if mode not in VIDEO_MODES:
            raise ValueError(
                f"FastLane video_mode must be one of {VIDEO_MODES}, got {video_mode!r}"
            )
        if not is_aec_env(env):
            raise TypeError(
                f"{type(env).__name__} is not a PettingZoo AEC env (it lacks one of "
                f"{', '.join(_AEC_ATTRIBUTES)}); wrap a gymnasium env with maybe_wrap_env"
            )
        use_headless_video()  # before the first render starts SDL (pygame boards)
        self.env = env
        self.run_id = run_id
        self.video_mode = mode
        self.publishing = mode != "off"
        self.agents_order = list(env.possible_agents)

        def pump(stream: str) -> FramePump:
            return FramePump(
                stream, interval_ms=interval_ms, max_dim=max_dim, return_window=return_window
            )

        #: The run's own stream (the board after every move).
        self.pump = pump(run_id)
        #: Each agent's stream, by agent.
        self.agent_pumps = {
            agent: pump(agent_stream_id(run_id, i)) for i, agent in enumerate(self.agents_order)
        }
        render_mode = getattr(env, "render_mode", None)
        if self.publishing and render_mode != "rgb_array":
            self._disable(f"the env's render_mode is {render_mode!r}, not 'rgb_array'")

    # -- the env's API --------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not set yet (during __init__): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        result = self.env.reset(*args, **kwargs)
        if self.publishing:
            render = _Render(self.env)
            for pump in self._pumps():
                pump.offer(render)
        return result

    def step(self, action: Any) -> Any:
        mover = self.env.agent_selection
        dead_step = self._done(mover)  # PettingZoo's step(None) of an agent that is done
        result = self.env.step(action)
        if self.publishing and not dead_step:
            self._after_move(mover)
        return result

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            for pump in self._pumps():
                pump.close()

    def __str__(self) -> str:
        return f"FastLaneAECWrapper<{self.env}>"

    # -- publishing -----------------------------------------------------------------------
    def _pumps(self) -> list[FramePump]:
        return [self.pump, *self.agent_pumps.values()]

    def _done(self, agent: Any) -> bool:
        terminations = getattr(self.env, "terminations", {}) or {}
        truncations = getattr(self.env, "truncations", {}) or {}
        return bool(terminations.get(agent) or truncations.get(agent))

    def _after_move(self, mover: Any) -> None:
        rewards = getattr(self.env, "rewards", {}) or {}
        live = list(getattr(self.env, "agents", []) or [])
        over = not live or all(self._done(agent) for agent in live)
        first = self.agents_order[0] if self.agents_order else None
        shown = [self.pump]
        for agent, pump in self.agent_pumps.items():
            reward = float(rewards.get(agent, 0.0) or 0.0)
            if agent == mover or over or reward:
                # Only the mover's stream counts a move (its moves per second).
                moves = 1 if agent == mover else 0
                pump.record_step(reward, over, moves)
                if agent == first:
                    self.pump.record_step(reward, over, moves)
                shown.append(pump)
        render = _Render(self.env)  # after the numbers: a frame carries its HUD
        for pump in shown:
            pump.offer(render)

    def _disable(self, reason: str) -> None:
        self.pump.disable(reason)  # one warning for the run
        for pump in self.agent_pumps.values():
            pump.pending, pump.disabled_reason = False, reason

    @property
    def frames_published(self) -> int:
        """Frames published to the run's own stream."""
        return self.pump.frames_published

    @property
    def frame_pending(self) -> bool:
        """True when a stream's newest frame was skipped by the interval (not published)."""
        return self.publishing and any(pump.pending for pump in self._pumps())

    def publish_pending_frame(self) -> bool:
        """Publish the current board to every stream whose frame is pending, whatever the
        interval; True when a frame was published."""
        if not self.publishing:
            return False
        render = _Render(self.env)
        published = False
        for pump in self._pumps():
            published = pump.publish_pending(render) or published
        return published

    def pending_frame_due_in(self) -> float | None:
        """Seconds until the interval allows the first pending frame (0.0: now); ``None``
        when no frame is pending."""
        due = [p.seconds_until_due() for p in self._pumps() if self.publishing and p.pending]
        return min(due) if due else None


def wrap_aec_env(env: Any, run_id: str, settings: dict[str, Any]) -> FastLaneAECWrapper:
    """Wrap an AEC env per ``settings`` (the ``mosaic_fastlane_wrap_env`` hook's dict)."""
    return FastLaneAECWrapper(env, run_id, **{k: v for k, v in settings.items() if v is not None})
