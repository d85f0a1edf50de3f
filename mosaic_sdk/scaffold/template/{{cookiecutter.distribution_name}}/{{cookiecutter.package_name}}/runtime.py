{% if cookiecutter.env_family == "pettingzoo" %}{% include "pettingzoo/runtime.py" %}{% else %}"""One run of the worker: the environment loop and the learner. Replace the learner with yours.

The SDK's ``worker_main`` (see ``cli.py``) has already parsed the command line, validated the
config, given stdout to telemetry and installed the SIGTERM/SIGINT handlers; :func:`run`
builds the env, plays ``config.episodes`` episodes while the learner improves, reports each
step and episode, writes ``analytics.json`` and ends with ``run_completed`` (or
``run_cancelled`` when asked to stop).

``ctx.cancelled``, checked every step, is also where the SDK's control protocol pauses the run
and saves a checkpoint on request (:func:`save_checkpoint`, also called at the end of a run).
A config with ``"mode": "interactive"`` is served by :func:`interactive_session` instead:
``reset``/``step`` commands step the env with the learner's greedy action (``mosaic play``).

The learner, :class:`PreferenceLearner`, is deliberately small: softmax preferences over a
discrete action space, independent of the observation, nudged after each episode towards the
actions of better-than-average episodes (a gradient bandit). On other action spaces it samples
uniformly. It is here to show where learning goes, not to solve anything.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.control.interactive import InteractiveSession
from mosaic_sdk.worker_cli import RunContext

from . import WORKER_TYPE
from .config import Config
from .telemetry import ALGORITHM, RunReporter


class PreferenceLearner:
    """Softmax action preferences for a discrete action space; uniform sampling otherwise."""

    def __init__(self, action_space: Any, config: Config) -> None:
        import gymnasium

        self.action_space = action_space
        self.rng = np.random.default_rng(config.seed)
        self.learning_rate = config.learning_rate
        self.exploration = config.exploration
        self.discrete = isinstance(action_space, gymnasium.spaces.Discrete)
        n = int(action_space.n) if self.discrete else 0
        self.preferences = np.zeros(n)
        self.baseline = 0.0
        self.episodes_seen = 0
        action_space.seed(config.seed)

    def probabilities(self) -> np.ndarray:
        z = np.exp(self.preferences - self.preferences.max())
        return z / z.sum()

    def act(self, observation: Any) -> Any:
        if not self.discrete or self.rng.random() < self.exploration:
            return self.action_space.sample()
        index = int(self.rng.choice(len(self.preferences), p=self.probabilities()))
        return int(self.action_space.start) + index

    def greedy(self, observation: Any) -> Any:
        """The most preferred action (no exploration): the policy of interactive mode."""
        if not self.discrete:
            return self.action_space.sample()
        return int(self.action_space.start) + int(np.argmax(self.preferences))

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps."""
        return {
            "preferences": self.preferences.tolist(),
            "baseline": self.baseline,
            "episodes_seen": self.episodes_seen,
        }

    def learn(self, actions: list[Any], episode_return: float) -> None:
        """Move preferences towards this episode's actions if it beat the running average."""
        self.episodes_seen += 1
        advantage = episode_return - self.baseline
        self.baseline += (episode_return - self.baseline) / self.episodes_seen
        if not self.discrete or not actions:
            return
        counts = np.bincount(
            np.asarray(actions, dtype=np.int64) - int(self.action_space.start),
            minlength=len(self.preferences),
        )
        frequencies = counts / counts.sum()
        step = self.learning_rate * np.tanh(advantage)
        self.preferences += step * (frequencies - self.probabilities())


def make_env(config: Config) -> Any:
    """The environment of a run{% if cookiecutter.include_fastlane %}, wrapped for FastLane when it is switched on{% endif %}."""
    import gymnasium

    kwargs: dict[str, Any] = {}
    if config.max_steps_per_episode is not None:
        kwargs["max_episode_steps"] = config.max_steps_per_episode
{%- if cookiecutter.include_fastlane %}
    from .fastlane import fastlane_settings, wrap_for_fastlane

    fastlane = fastlane_settings(config)
    if fastlane.enabled:
        kwargs["render_mode"] = "rgb_array"
        return wrap_for_fastlane(gymnasium.make(config.env_id, **kwargs), config, fastlane)
{%- endif %}
    return gymnasium.make(config.env_id, **kwargs)


def save_checkpoint(ctx: RunContext, learner: PreferenceLearner, steps: int) -> Path:
    """Write the learner's state as JSON and report it (``checkpoint_saved``)."""
    path = ctx.run_dir / f"checkpoint-{steps}.json"
    path.write_text(json.dumps(learner.state()), encoding="utf-8")
    ctx.emitter.checkpoint_saved(checkpoint_path=str(path), step=steps)
    return path


def interactive_session(ctx: RunContext) -> InteractiveSession:
    """Interactive mode: the run's env, stepped on command with the greedy action."""
    config = ctx.config
    assert isinstance(config, Config)
    env = make_env(config)
    learner = PreferenceLearner(env.action_space, config)
    return InteractiveSession(
        env, learner.greedy, info={"env_id": config.env_id, "algo": ALGORITHM}
    )


def count_steps(config: Config) -> int:
    """The steps a run of ``config`` takes: its episodes played as :func:`run` plays them (same
    seeding, same learner), without telemetry or delay. The conformance config is sized by it."""
    env = make_env(config)
    learner = PreferenceLearner(env.action_space, config)
    total = 0
    try:
        for episode in range(config.episodes):
            obs, _ = env.reset(seed=config.seed if episode == 0 else None)
            actions: list[Any] = []
            episode_return = 0.0
            terminated = truncated = False
            while not (terminated or truncated):
                action = learner.act(obs)
                obs, reward, terminated, truncated, _ = env.step(action)
                actions.append(action)
                episode_return += float(reward)
                total += 1
            learner.learn(actions, episode_return)
    finally:
        env.close()
    return total


def run(ctx: RunContext) -> None:
    """Run ``config.episodes`` episodes, learning and reporting as they go."""
    config = ctx.config
    assert isinstance(config, Config)
    env = make_env(config)
    learner = PreferenceLearner(env.action_space, config)
    if ctx.control is not None:
        ctx.control.on_checkpoint(lambda: save_checkpoint(ctx, learner, report.total_steps))
    status = "completed"
    with RunReporter(ctx.emitter, config) as report:
        try:
            for episode in range(config.episodes):
                # Seed only the first reset: later episodes continue the same random stream,
                # so the whole run is reproducible from one seed.
                obs, _ = env.reset(seed=config.seed if episode == 0 else None)
                actions: list[Any] = []
                episode_return, steps = 0.0, 0
                terminated = truncated = False
                while not (terminated or truncated):
                    if ctx.cancelled:
                        break
                    action = learner.act(obs)
                    obs, reward, terminated, truncated, _ = env.step(action)
                    terminated, truncated = bool(terminated), bool(truncated)
                    actions.append(action)
                    episode_return += float(reward)
                    report.step(
                        steps,
                        float(reward),
                        terminated=terminated,
                        truncated=truncated,
                        action=action,
                        obs=obs,
                    )
                    steps += 1
                    if config.step_delay_ms:
                        time.sleep(config.step_delay_ms / 1000.0)
                if ctx.cancelled:
                    status = "cancelled"
                    break
                learner.learn(actions, episode_return)
                report.episode(episode_return, steps, terminated=terminated, truncated=truncated)
        except Exception:
            status = "failed"  # worker_main reports run_failed with the traceback
            raise
        finally:
            env.close()
            # The SDK's one manifest format; what only this worker has goes in ``extra``.
            manifest = AnalyticsManifest.build(
                run_id=config.run_id,
                worker_type=WORKER_TYPE,
                status=status,
                returns=report.returns,
                steps=report.total_steps,
                duration_seconds=report.duration_seconds,
                env_id=config.env_id,
                algo=ALGORITHM,
                seed=config.seed,
                extra={"action_preferences": learner.preferences.tolist()},
            )
            write_analytics(ctx.run_dir, manifest)
        if status != "failed":
            save_checkpoint(ctx, learner, report.total_steps)
        if status == "cancelled":
            report.cancelled(ctx.stop_reason)
        else:
            report.completed({"mean_return": manifest.mean_return, "steps": report.total_steps})
{% endif %}