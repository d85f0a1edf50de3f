{%- set pz = cookiecutter.env_family == "pettingzoo" -%}
{%- if pz -%}
"""What a run reports, written through the SDK's telemetry emitter, one row per agent.

The SDK's :class:`~mosaic_sdk.telemetry.TelemetryEmitter` writes the JSONL lines; this module
decides *what* this worker reports and keeps the counts per agent that the heartbeat, the
final summary and ``analytics.json`` share:

    run_started (with the run's ``agents``) -> step lines (``agent_id`` on each) -> one
    episode line per agent per game -> ... -> run_completed with the counts per agent
    (or run_cancelled), with a heartbeat every ``heartbeat_interval`` seconds.

An *episode* is one game: it ends when every agent is done, and each agent then reports its
own episode line (its steps, its return). ``run_completed``'s ``episodes`` counts games.
"""
{%- else -%}
"""What a run reports, written through the SDK's telemetry emitter.

The SDK's :class:`~mosaic_sdk.telemetry.TelemetryEmitter` writes the JSONL lines (one schema,
sequence numbers, batching); this module decides *what* this worker reports and keeps the
progress counters the heartbeat and the final summary share:

    run_started -> step lines -> an episode line per episode -> ... -> run_completed
    (or run_cancelled), with a heartbeat every ``heartbeat_interval`` seconds.
"""
{%- endif %}

from __future__ import annotations

import time
{%- if pz %}
from collections.abc import Sequence
{%- endif %}
from typing import Any

from mosaic_sdk.telemetry import Heartbeat, TelemetryEmitter

from . import WORKER_TYPE
from .config import Config

ALGORITHM = "softmax_preferences"


class RunReporter:
{%- if pz %}
    """Reports one run of ``agents``; a context manager around the games (runs the heartbeat)."""

    def __init__(self, emitter: TelemetryEmitter, config: Config, agents: Sequence[str]) -> None:
        self.emitter = emitter
        self.config = config
        self.agents = list(agents)
        emitter.step_every = config.step_every
        self.returns: list[float] = []  # per game: the sum of the agents' returns
        #: each agent's return per game (analytics.json's per-agent summaries)
        self.agent_returns: dict[str, list[float]] = {a: [] for a in self.agents}
        self.counts = {a: {"episodes": 0, "steps": 0, "total_reward": 0.0} for a in self.agents}
        self.episode_index = 0
        self.total_steps = 0
        self.episode_steps = dict.fromkeys(self.agents, 0)
        self.episode_returns = dict.fromkeys(self.agents, 0.0)
{%- else %}
    """Reports one run; use it as a context manager around the episodes (runs the heartbeat)."""

    def __init__(self, emitter: TelemetryEmitter, config: Config) -> None:
        self.emitter = emitter
        self.config = config
        emitter.step_every = config.step_every
        self.returns: list[float] = []
        self.episode_index = 0
        self.total_steps = 0
{%- endif %}
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
{%- if pz %}
            agents=self.agents,
{%- endif %}
        )
        self._heartbeat.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._heartbeat.stop()
{% if pz %}
    def step(
        self, agent: str, reward: float, *, terminated: bool, truncated: bool, action: Any
    ) -> None:
        """One step of ``agent``: numbered by its own steps in the game (per_agent)."""
        self.emitter.step(
            self.episode_index,
            self.episode_steps[agent],
            float(reward),
            terminated=terminated,
            truncated=truncated,
            action=action,
            agent_id=agent,
        )
        self.episode_steps[agent] += 1
        self.episode_returns[agent] += float(reward)
        self.total_steps += 1

    def episode(self, ended: dict[str, tuple[bool, bool]]) -> dict[str, float]:
        """The game is over: one episode line per agent; returns each agent's return."""
        returns = dict(self.episode_returns)
        for agent in self.agents:
            terminated, truncated = ended.get(agent, (False, True))
            self.emitter.episode(
                self.episode_index,
                returns[agent],
                self.episode_steps[agent],
                terminated=terminated,
                truncated=truncated,
                agent_id=agent,
            )
            own = self.counts[agent]
            own["episodes"] += 1
            own["steps"] += self.episode_steps[agent]
            own["total_reward"] += returns[agent]
            self.agent_returns[agent].append(returns[agent])
        self.returns.append(sum(returns.values()))
        self.episode_index += 1
        self.episode_steps = dict.fromkeys(self.agents, 0)
        self.episode_returns = dict.fromkeys(self.agents, 0.0)
        return returns
{%- else %}
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
{%- endif %}

    @property
    def duration_seconds(self) -> float:
        return time.monotonic() - self.started

    def completed(self, final_metrics: dict[str, Any]) -> None:
        self.emitter.run_completed(
            episodes=len(self.returns),
            total_reward=sum(self.returns),
            duration_seconds=self.duration_seconds,
            final_metrics=final_metrics,
{%- if pz %}
            agents=self.counts,
{%- endif %}
        )

    def cancelled(self, reason: str) -> None:
        """``reason``: why the run stopped (``ctx.stop_reason``: a stop command, a signal)."""
{%- if pz %}
        self.emitter.run_cancelled(
            reason=reason, completed_episodes=len(self.returns), agents=self.counts
        )
{%- else %}
        self.emitter.run_cancelled(reason=reason, completed_episodes=len(self.returns))
{%- endif %}
