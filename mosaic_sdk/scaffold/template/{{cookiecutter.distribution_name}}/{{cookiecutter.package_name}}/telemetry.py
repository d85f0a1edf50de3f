{% if cookiecutter.env_family == "pettingzoo" %}{% include "pettingzoo/telemetry.py" %}{% else %}"""What a run reports, written through the SDK's telemetry emitter.

The SDK's :class:`~mosaic_sdk.telemetry.TelemetryEmitter` writes the JSONL lines (one schema,
sequence numbers, batching); this module decides *what* this worker reports and keeps the
progress counters the heartbeat and the final summary share:

    run_started -> step lines -> an episode line per episode -> ... -> run_completed
    (or run_cancelled), with a heartbeat every ``heartbeat_interval`` seconds.
"""

from __future__ import annotations

import time
from typing import Any

from mosaic_sdk.telemetry import Heartbeat, TelemetryEmitter

from . import WORKER_TYPE
from .config import Config

ALGORITHM = "softmax_preferences"


class RunReporter:
    """Reports one run; use it as a context manager around the episodes (runs the heartbeat)."""

    def __init__(self, emitter: TelemetryEmitter, config: Config) -> None:
        self.emitter = emitter
        self.config = config
        emitter.step_every = config.step_every
        self.returns: list[float] = []
        self.episode_index = 0
        self.total_steps = 0
        self.started = time.monotonic()
        self._heartbeat = Heartbeat(emitter, config.heartbeat_interval, progress=self.progress)

    def progress(self) -> dict[str, Any]:
        """Where the run is: the heartbeat's payload."""
        return {"episode": self.episode_index, "step": self.total_steps}

    def __enter__(self) -> RunReporter:
        self.emitter.run_started(
            worker_type=WORKER_TYPE,
            algo=ALGORITHM,
            env_id=self.config.env_id,
            seed=self.config.seed,
            config=self.config.to_dict(),
        )
        self._heartbeat.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._heartbeat.stop()

    def step(
        self, step: int, reward: float, *, terminated: bool, truncated: bool, action: Any, obs: Any
    ) -> None:
        self.total_steps += 1
        self.emitter.step(
            self.episode_index,
            step,
            float(reward),
            terminated=terminated,
            truncated=truncated,
            action=action,
            observation=obs,
        )

    def episode(
        self, total_reward: float, steps: int, *, terminated: bool, truncated: bool
    ) -> None:
        self.returns.append(float(total_reward))
        self.emitter.episode(
            self.episode_index,
            float(total_reward),
            steps,
            terminated=terminated,
            truncated=truncated,
        )
        self.episode_index += 1

    @property
    def duration_seconds(self) -> float:
        return time.monotonic() - self.started

    def completed(self, final_metrics: dict[str, Any]) -> None:
        self.emitter.run_completed(
            episodes=len(self.returns),
            total_reward=sum(self.returns),
            duration_seconds=self.duration_seconds,
            final_metrics=final_metrics,
        )

    def cancelled(self, reason: str) -> None:
        """``reason``: why the run stopped (``ctx.stop_reason``: a stop command, a signal)."""
        self.emitter.run_cancelled(reason=reason, completed_episodes=len(self.returns))
{% endif %}