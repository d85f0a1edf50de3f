"""One run of the worker: agents playing a PettingZoo AEC (turn-based) game, and learning.

The SDK's ``worker_main`` (see ``cli.py``) has already parsed the command line, validated the
config, given stdout to telemetry and installed the SIGTERM/SIGINT handlers; :func:`run`
plays ``config.episodes`` games while the policies improve, reports each move and game,
writes ``analytics.json`` and ends with ``run_completed`` (or ``run_cancelled``).

How a turn-based game is reported:

- **Agents act in turn** (``env.agent_iter()``); each picks a *legal* action, from the
  ``action_mask`` of its observation.
- **A reward is credited to the agent that moved.** A move's reward is known only later (a
  win shows when the game ends, often after the other agent's reply): ``env.last()`` gives
  the acting agent the reward it accumulated since its own last move. So each agent's step
  line is written at its *next* turn, or when the game ends, with that reward.
- **Step numbering is per agent**: an agent's step lines in a game are numbered 0, 1, 2...
  by its own moves (``step_numbering="per_agent"`` in ``plugin.py``).
- **An episode is one game**: it ends when every agent is done; each agent then writes its
  own episode line (its moves, its return); ``run_completed`` counts games.
- ``ctx.cancelled`` is checked before every move: that is where the SDK's control protocol
  pauses the run and saves a checkpoint on request.
{%- if cookiecutter.include_fastlane %}
- **The board on FastLane** when FastLane is on (``make_env(config, frames=True)``): the
  board after every move on the run's stream and on each agent's, so ``mosaic watch`` shows
  the game of a run, and of ``mosaic play``.
{%- endif %}

A config with ``"mode": "interactive"`` is served by :func:`interactive_session` instead: the
policies learn from ``config.episodes`` games, then a person plays ``config.human`` against
them (``mosaic play``; the SDK's ``TurnBasedSession`` shows the legal moves and refuses an
illegal one).
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.control.interactive import TurnBasedSession
from mosaic_sdk.worker_cli import RunContext

from . import WORKER_TYPE
from .config import Config
from .telemetry import ALGORITHM, RunReporter


{% include "pettingzoo/policy.py" %}

def mask_of(observation: Any) -> np.ndarray | None:
    """The legal-action mask of an AEC observation (PettingZoo's classic games give one)."""
    if isinstance(observation, dict) and "action_mask" in observation:
        return np.asarray(observation["action_mask"])
    return None


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
    cancelled.

    With ``report``, each agent's move is reported at its next turn (or at the end of the
    game) with the reward that move earned it.
    """
    env.reset(seed=seed)
    actions: dict[str, list[int]] = {a: [] for a in env.possible_agents}
    returns = dict.fromkeys(env.possible_agents, 0.0)
    waiting: dict[str, int] = {}  # agent -> its last action, waiting for the reward it earns
    ended: dict[str, tuple[bool, bool]] = {}
    for agent in env.agent_iter():
        # The reward ``agent`` earned since its own last move: credited to that move.
        observation, reward, terminated, truncated, _ = env.last()
        terminated, truncated = bool(terminated), bool(truncated)
        returns[agent] += float(reward)
        if agent in waiting and report is not None:
            report.step(
                agent,
                float(reward),
                terminated=terminated,
                truncated=truncated,
                action=waiting[agent],
            )
        waiting.pop(agent, None)
        if terminated or truncated:
            ended[agent] = (terminated, truncated)
            env.step(None)  # an agent that is done leaves the game
            continue
        if ctx is not None and ctx.cancelled:  # the control safe point, before every move
            return None
        action = policies[agent].act(mask_of(observation))
        waiting[agent] = action
        actions[agent].append(action)
        env.step(action)
        if delay_ms:
            time.sleep(delay_ms / 1000.0)
    if report is not None:
        report.episode(ended)
    return actions, returns


def learn(
    policies: dict[str, PreferencePolicy], actions: dict[str, list[int]], returns: dict[str, float]
) -> None:
    """Each agent's policy learns from its own moves and return (a shared one from all)."""
    for agent, own in actions.items():
        policies[agent].learn(own, returns.get(agent, 0.0))


def count_steps(config: Config) -> int:
    """The moves a run of ``config`` makes: its games played as :func:`run` plays them (same
    seeding, same learning), without telemetry or delay. The conformance config is sized by it."""
    env = make_env(config)
    policies = make_policies(env, list(env.possible_agents), config)
    total = 0
    try:
        for episode in range(config.episodes):
            played = play_game(env, policies, seed=config.seed if episode == 0 else None)
            assert played is not None
            actions, returns = played
            total += sum(len(own) for own in actions.values())
            learn(policies, actions, returns)
    finally:
        env.close()
    return total


def interactive_session(ctx: RunContext) -> TurnBasedSession:
    """Interactive mode: learn from ``config.episodes`` games, then let a person play
    ``config.human`` while the policies play the other agents (greedy, so that a seeded
    ``reset`` replays)."""
    config = ctx.config
    assert isinstance(config, Config)
    env = make_env(config)
    policies = make_policies(env, list(env.possible_agents), config)
    try:
        for episode in range(config.episodes):
            if ctx.cancel.is_set():
                break
            played = play_game(env, policies, seed=config.seed if episode == 0 else None)
            assert played is not None
            learn(policies, *played)
    finally:
        env.close()
    game = make_env(config{{ ", frames=True" if cookiecutter.include_fastlane else "" }})

    def policy(agent: str, observation: Any) -> int:
        return policies[agent].greedy(mask_of(observation))

    human = config.human or game.possible_agents[-1]
    return TurnBasedSession(
        game, policy, human=human, info={"env_id": config.env_id, "algo": ALGORITHM}
    )


def run(ctx: RunContext) -> None:
    """Play ``config.episodes`` games, learning and reporting as they go."""
    config = ctx.config
    assert isinstance(config, Config)
    env = make_env(config{{ ", frames=True" if cookiecutter.include_fastlane else "" }})
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
