"""One run of the worker: agents playing a PettingZoo parallel game at once, and learning.

The SDK's ``worker_main`` (see ``cli.py``) has already parsed the command line, validated the
config, given stdout to telemetry and installed the SIGTERM/SIGINT handlers; :func:`run`
plays ``config.episodes`` games while the policies improve, reports each step and game,
writes ``analytics.json`` and ends with ``run_completed`` (or ``run_cancelled``).

How a simultaneous game is reported:

- **Every live agent acts at each step** (``env.step({agent: action, ...})``) and gets its
  own reward at once: one step line per agent per step, numbered by the game's steps
  (``step_numbering="per_agent"``: each agent's own steps, the same numbers here).
- **An episode is one game**: it ends when no agent is left; each agent then writes its own
  episode line (its steps, its return); ``run_completed`` counts games.
- ``ctx.cancelled`` is checked before every step: that is where the SDK's control protocol
  pauses the run and saves a checkpoint on request.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.worker_cli import RunContext

from . import WORKER_TYPE
from .config import Config
from .telemetry import ALGORITHM, RunReporter


{% include "pettingzoo/policy.py" %}

def play_game(
    env: Any,
    policies: dict[str, PreferencePolicy],
    *,
    seed: int | None,
    report: RunReporter | None = None,
    ctx: RunContext | None = None,
    delay_ms: float = 0.0,
) -> tuple[dict[str, list[int]], dict[str, float]] | None:
    """Play one game; returns each agent's actions and return, or ``None`` when the run was
    cancelled."""
    env.reset(seed=seed)
    actions: dict[str, list[int]] = {a: [] for a in env.possible_agents}
    returns = dict.fromkeys(env.possible_agents, 0.0)
    ended: dict[str, tuple[bool, bool]] = {}
    while env.agents:
        if ctx is not None and ctx.cancelled:  # the control safe point, before every step
            return None
        chosen = {agent: policies[agent].act() for agent in env.agents}
        _, rewards, terminations, truncations, _ = env.step(chosen)
        for agent, action in chosen.items():
            reward = float(rewards.get(agent, 0.0))
            terminated, truncated = bool(terminations.get(agent)), bool(truncations.get(agent))
            actions[agent].append(action)
            returns[agent] += reward
            if report is not None:
                report.step(
                    agent, reward, terminated=terminated, truncated=truncated, action=action
                )
            if terminated or truncated:
                ended[agent] = (terminated, truncated)
        if delay_ms:
            time.sleep(delay_ms / 1000.0)
    if report is not None:
        report.episode(ended)
    return actions, returns


def learn(
    policies: dict[str, PreferencePolicy], actions: dict[str, list[int]], returns: dict[str, float]
) -> None:
    """Each agent's policy learns from its own actions and return (a shared one from all)."""
    for agent, own in actions.items():
        policies[agent].learn(own, returns.get(agent, 0.0))


def count_steps(config: Config) -> int:
    """The steps a run of ``config`` takes: its games played as :func:`run` plays them (same
    seeding, same learning), without telemetry or delay. The conformance config is sized by it."""
    env = make_env(config)
    policies = make_policies(env, list(env.possible_agents), config)
    total = 0
    try:
        for episode in range(config.episodes):
            played = play_game(env, policies, seed=config.seed if episode == 0 else None)
            assert played is not None
            actions, returns = played
            total += max(len(own) for own in actions.values())
            learn(policies, actions, returns)
    finally:
        env.close()
    return total


def run(ctx: RunContext) -> None:
    """Play ``config.episodes`` games, learning and reporting as they go."""
    config = ctx.config
    assert isinstance(config, Config)
    env = make_env(config)
    agents = list(env.possible_agents)
    policies = make_policies(env, agents, config)
    status = "completed"
    with RunReporter(ctx.emitter, config, agents) as report:
        if ctx.control is not None:
            ctx.control.on_checkpoint(lambda: save_checkpoint(ctx, policies, report.total_steps))
        try:
            for episode in range(config.episodes):
                # Seed only the first reset: later games continue the same random stream,
                # so the whole run is reproducible from one seed.
                played = play_game(
                    env,
                    policies,
                    seed=config.seed if episode == 0 else None,
                    report=report,
                    ctx=ctx,
                    delay_ms=config.step_delay_ms,
                )
                if played is None:
                    status = "cancelled"
                    break
                learn(policies, *played)
        except Exception:
            status = "failed"  # worker_main reports run_failed with the traceback
            raise
        finally:
            env.close()
            manifest = AnalyticsManifest.build(
                run_id=config.run_id,
                worker_type=WORKER_TYPE,
                status=status,
                returns=report.returns,
                agent_returns=report.agent_returns,
                steps=report.total_steps,
                duration_seconds=report.duration_seconds,
                env_id=config.env_id,
                algo=ALGORITHM,
                seed=config.seed,
                extra={"agents": report.counts},
            )
            write_analytics(ctx.run_dir, manifest)
        if status != "failed":
            save_checkpoint(ctx, policies, report.total_steps)
        if status == "cancelled":
            report.cancelled(ctx.stop_reason)
        else:
            report.completed({"mean_return": manifest.mean_return, "steps": report.total_steps})
