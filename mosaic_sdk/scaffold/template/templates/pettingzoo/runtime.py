{%- set tb = cookiecutter.paradigm == "turn_based" -%}
"""One run of the worker: agents playing a PettingZoo {{ "AEC (turn-based) game" if tb else "parallel game at once" }}, and learning.

The SDK's ``worker_main`` (see ``cli.py``) has already parsed the command line, validated the
config, given stdout to telemetry and installed the SIGTERM/SIGINT handlers; :func:`run`
plays ``config.episodes`` games while the policies improve, reports each {{ 'move' if tb else 'step' }} and game,
writes ``analytics.json`` and ends with ``run_completed`` (or ``run_cancelled``).

How a {{ "turn-based" if tb else "simultaneous" }} game is reported:
{% if tb %}
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
{%- else %}
- **Every live agent acts at each step** (``env.step({agent: action, ...})``) and gets its
  own reward at once: one step line per agent per step, numbered by the game's steps
  (``step_numbering="per_agent"``: each agent's own steps, the same numbers here).
- **An episode is one game**: it ends when no agent is left; each agent then writes its own
  episode line (its steps, its return); ``run_completed`` counts games.
{%- endif %}
- ``ctx.cancelled`` is checked before every {{ "move" if tb else "step" }}: that is where the SDK's control protocol
  pauses the run and saves a checkpoint on request.
{%- if cookiecutter.include_fastlane %}
- **The board on FastLane** when FastLane is on (``make_env(config, frames=True)``): the
  board after every move on the run's stream and on each agent's, so ``mosaic watch`` shows
  the game of a run, and of ``mosaic play``.
{%- endif %}
{%- if tb %}

A config with ``"mode": "interactive"`` is served by :func:`interactive_session` instead: the
policies learn from ``config.episodes`` games, then a person plays ``config.human`` against
them (``mosaic play``; the SDK's ``TurnBasedSession`` shows the legal moves and refuses an
illegal one).
{%- endif %}
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
{%- if tb %}
from mosaic_sdk.control.interactive import TurnBasedSession
{%- endif %}
from mosaic_sdk.worker_cli import RunContext

from . import WORKER_TYPE
from .config import Config
from .telemetry import ALGORITHM, RunReporter


class PreferencePolicy:
    """Softmax preferences over a discrete action space, restricted to the legal actions.

    Deliberately small: the preferences do not depend on the observation; after each game
    they move towards the actions of games that went better than average (a gradient
    bandit). It is here to show where learning goes, not to play well.
    """

    def __init__(self, n_actions: int, config: Config, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)
        self.learning_rate = config.learning_rate
        self.exploration = config.exploration
        self.preferences = np.zeros(n_actions)
        self.baseline = 0.0
        self.games_seen = 0

    def probabilities(self, mask: np.ndarray | None = None) -> np.ndarray:
        z = np.exp(self.preferences - self.preferences.max())
        if mask is not None:
            z = z * (np.asarray(mask) > 0)
        total = z.sum()
        if total <= 0:  # nothing legal has any weight: uniform over the legal actions
            z = np.ones_like(z) if mask is None else (np.asarray(mask) > 0).astype(float)
            total = z.sum()
        return z / total

    def act(self, mask: np.ndarray | None = None) -> int:
        """An action, legal under ``mask`` (1 = legal) when given."""
        legal = np.arange(len(self.preferences))
        if mask is not None:
            legal = np.flatnonzero(np.asarray(mask) > 0)
        if self.rng.random() < self.exploration:
            return int(self.rng.choice(legal))
        return int(self.rng.choice(len(self.preferences), p=self.probabilities(mask)))

    def greedy(self, mask: np.ndarray | None = None) -> int:
        """The most preferred legal action (the first of equals): the policy of play."""
        return int(np.argmax(self.probabilities(mask)))

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps."""
        return {
            "preferences": self.preferences.tolist(),
            "baseline": self.baseline,
            "games_seen": self.games_seen,
        }

    def learn(self, actions: list[int], game_return: float) -> None:
        """Move preferences towards this game's actions if it beat the running average."""
        self.games_seen += 1
        advantage = game_return - self.baseline
        self.baseline += (game_return - self.baseline) / self.games_seen
        if not actions:
            return
        counts = np.bincount(np.asarray(actions, dtype=np.int64), minlength=len(self.preferences))
        frequencies = counts / counts.sum()
        step = self.learning_rate * np.tanh(advantage)
        self.preferences += step * (frequencies - self.probabilities())


def make_policies(env: Any, agents: list[str], config: Config) -> dict[str, PreferencePolicy]:
    """One policy per agent, or one shared by all (``config.shared_policy``: self-play)."""
    n = int(env.action_space(agents[0]).n)
    if config.shared_policy:
        shared = PreferencePolicy(n, config, config.seed)
        return dict.fromkeys(agents, shared)
    return {
        agent: PreferencePolicy(
            int(env.action_space(agent).n), config, None if config.seed is None else config.seed + i
        )
        for i, agent in enumerate(agents)
    }


def save_checkpoint(ctx: RunContext, policies: dict[str, PreferencePolicy], steps: int) -> Path:
    """Write every agent's policy as JSON and report it (``checkpoint_saved``)."""
    path = ctx.run_dir / f"checkpoint-{steps}.json"
    path.write_text(json.dumps({a: p.state() for a, p in policies.items()}), encoding="utf-8")
    ctx.emitter.checkpoint_saved(checkpoint_path=str(path), step=steps)
    return path


{% if cookiecutter.include_fastlane -%}
def make_env(config: Config, *, frames: bool = False) -> Any:
    """The PettingZoo env of a run: ``config.env_id`` is its module. With ``frames`` (the
    games a run reports, and the one a person plays) and FastLane on, the game renders
    ``rgb_array`` frames of its board and the SDK's wrapper publishes them after every move
    to the run's stream and to each agent's. A game without an ``rgb_array`` render is
    wrapped all the same: the wrapper then says why it publishes nothing."""
    module = importlib.import_module(config.env_id)
    if not frames:
        return module.env()
    from .fastlane import fastlane_settings, wrap_for_fastlane

    fastlane = fastlane_settings(config)
    if not fastlane.enabled:
        return module.env()
    modes = getattr(getattr(module, "raw_env", None), "metadata", {}).get("render_modes", [])
    env = module.env(render_mode="rgb_array") if "rgb_array" in modes else module.env()
    return wrap_for_fastlane(env, config, fastlane)
{%- else -%}
def make_env(config: Config) -> Any:
    """The PettingZoo env of a run: ``config.env_id`` is its module."""
    module = importlib.import_module(config.env_id)
    return module.{{ "env" if cookiecutter.paradigm == "turn_based" else "parallel_env" }}({{ "" if cookiecutter.paradigm == "turn_based" else "max_cycles=config.max_cycles" }})
{%- endif %}
{%- if tb %}


def mask_of(observation: Any) -> np.ndarray | None:
    """The legal-action mask of an AEC observation (PettingZoo's classic games give one)."""
    if isinstance(observation, dict) and "action_mask" in observation:
        return np.asarray(observation["action_mask"])
    return None
{%- endif %}


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
{%- if tb %}

    With ``report``, each agent's move is reported at its next turn (or at the end of the
    game) with the reward that move earned it.
    """
{%- else %}"""
{%- endif %}
    env.reset(seed=seed)
    actions: dict[str, list[int]] = {a: [] for a in env.possible_agents}
    returns = dict.fromkeys(env.possible_agents, 0.0)
{%- if tb %}
    waiting: dict[str, int] = {}  # agent -> its last action, waiting for the reward it earns
{%- endif %}
    ended: dict[str, tuple[bool, bool]] = {}
{%- if tb %}
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
{%- else %}
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
{%- endif %}
        if delay_ms:
            time.sleep(delay_ms / 1000.0)
    if report is not None:
        report.episode(ended)
    return actions, returns


def learn(
    policies: dict[str, PreferencePolicy], actions: dict[str, list[int]], returns: dict[str, float]
) -> None:
    """Each agent's policy learns from its own {{ 'moves' if tb else 'actions' }} and return (a shared one from all)."""
    for agent, own in actions.items():
        policies[agent].learn(own, returns.get(agent, 0.0))


def count_steps(config: Config) -> int:
    """The {{ "moves a run of ``config`` makes" if tb else "steps a run of ``config`` takes" }}: its games played as :func:`run` plays them (same
    seeding, same learning), without telemetry or delay. The conformance config is sized by it."""
    env = make_env(config)
    policies = make_policies(env, list(env.possible_agents), config)
    total = 0
    try:
        for episode in range(config.episodes):
            played = play_game(env, policies, seed=config.seed if episode == 0 else None)
            assert played is not None
            actions, returns = played
            total += {{ 'sum' if tb else 'max' }}(len(own) for own in actions.values())
            learn(policies, actions, returns)
    finally:
        env.close()
    return total
{%- if tb %}


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
{%- endif %}


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
