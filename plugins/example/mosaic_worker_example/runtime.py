"""One run of the example worker: the part a worker author replaces with real training.

The SDK's `worker_main` has already parsed the CLI, validated the config, claimed stdout for
telemetry and installed the SIGTERM/SIGINT handlers; this function only runs episodes and
reports them. What it emits, in order:

    run_started, then per step a step line (every `step_every`-th, episode ends always),
    per episode an episode line (with policy 'reinforce', then a `metrics` event: the
    update's loss and entropy at the run's env step), a heartbeat every
    `heartbeat_interval` seconds,
    a checkpoint_saved at the end (and whenever a `checkpoint` command asks; with policy
    'reinforce' it holds the weights, and `resume_from` starts a run from them: a
    checkpoint_loaded follows run_started),
    and finally run_completed, or run_cancelled when asked to stop.

`ctx.cancelled`, checked every step, is also where the control protocol pauses the run
(`pause`/`resume` from `mosaic control` or a Session) and saves a requested checkpoint.
With `"mode": "interactive"` the SDK serves `interactive_session(ctx)` instead of `run`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.control.interactive import InteractiveSession
from mosaic_sdk.telemetry import Heartbeat
from mosaic_sdk.worker_cli import RunContext
from mosaic_worker_example.config import ExampleConfig
from mosaic_worker_example.learner import Reinforce


def make_env(config: ExampleConfig, *, interactive: bool = False) -> Any:
    """The run's env, wrapped to publish FastLane frames when FastLane is on.

    The SDK decides whether it is on (``resolve_fastlane``: the config's ``fastlane`` switch,
    else the launcher's variables) and wraps through the ``mosaic_fastlane_wrap_env`` hook.
    """
    import gymnasium

    from mosaic_sdk.fastlane import resolve_fastlane
    from mosaic_sdk.plugins import maybe_wrap_env

    # Interactive stepping too keeps FastLane's frame interval (16 ms unless
    # MOSAIC_FASTLANE_INTERVAL_MS says otherwise; 0 publishes every step's frame): the
    # session publishes a skipped step's frame once stepping pauses, so the latest state is
    # always shown.
    fastlane = resolve_fastlane(config.fastlane)
    kwargs: dict[str, Any] = {}
    if config.max_steps_per_episode is not None:
        kwargs["max_episode_steps"] = config.max_steps_per_episode
    if fastlane.enabled or (interactive and config.json_frames):
        kwargs["render_mode"] = "rgb_array"
    env = gymnasium.make(config.env_id, **kwargs)
    return maybe_wrap_env(env, run_id=config.run_id, settings=fastlane)


def choose_action(
    config: ExampleConfig, env: Any, obs: Any, learner: Reinforce | None = None
) -> Any:
    if learner is not None:
        return learner.act(obs)
    if config.policy == "balance" and config.env_id.startswith("CartPole"):
        # Push the cart towards the side the pole is falling to.
        angle, angular_velocity = float(obs[2]), float(obs[3])
        return 1 if angle + 0.5 * angular_velocity > 0 else 0
    return env.action_space.sample()  # 'random', and 'reinforce' before any training


def make_learner(config: ExampleConfig, env: Any) -> Reinforce | None:
    """The learner of policy 'reinforce' (None for the fixed policies)."""
    if config.policy != "reinforce":
        return None
    return Reinforce(
        env.observation_space,
        env.action_space,
        learning_rate=config.learning_rate,
        gamma=config.gamma,
        seed=config.seed,
    )


def interactive_session(ctx: RunContext) -> InteractiveSession:
    """Interactive mode: the same env and policy, stepped on command."""
    config = ctx.config
    assert isinstance(config, ExampleConfig)
    env = make_env(config, interactive=True)
    return InteractiveSession(
        env,
        lambda obs: choose_action(config, env, obs),
        info={"env_id": config.env_id, "algo": config.policy, "policy_path": None},
        json_frames=config.json_frames,
    )


def save_checkpoint(
    ctx: RunContext,
    progress: Mapping[str, int],
    returns: list[float],
    learner: Reinforce | None = None,
) -> Path:
    """The run's progress as JSON, and the policy's weights with policy 'reinforce'."""
    path = ctx.run_dir / f"checkpoint-{progress['step']}.json"
    state = {} if learner is None else {"policy": learner.state()}
    path.write_text(json.dumps({**progress, "returns": returns, **state}))
    ctx.emitter.checkpoint_saved(
        checkpoint_path=str(path), episode=progress["episode"], step=progress["step"]
    )
    return path


def load_checkpoint(ctx: RunContext, learner: Reinforce | None) -> None:
    """Start the learner from ``resume_from`` (``ValueError`` saying why it cannot)."""
    config = ctx.config
    assert isinstance(config, ExampleConfig)
    if config.resume_from is None:
        return
    try:
        saved = json.loads(Path(config.resume_from).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"resume_from {config.resume_from}: cannot read it ({exc})") from None
    if learner is not None:
        if not isinstance(saved, dict) or not isinstance(saved.get("policy"), dict):
            raise ValueError(
                f"resume_from {config.resume_from}: no policy weights in it (a checkpoint "
                "of a run with policy 'reinforce' has them)"
            )
        learner.load(saved["policy"])
    ctx.emitter.checkpoint_loaded(checkpoint_path=config.resume_from)


def run(ctx: RunContext) -> None:
    config = ctx.config
    assert isinstance(config, ExampleConfig)
    emitter = ctx.emitter
    emitter.step_every = config.step_every
    started = time.monotonic()

    env = make_env(config)
    env.action_space.seed(config.seed)
    try:
        learner = make_learner(config, env)
    except ValueError:  # an env this learner cannot drive: the run fails, saying why
        env.close()
        raise
    emitter.run_started(
        worker_type="example",
        algo=config.policy,
        env_id=config.env_id,
        seed=config.seed,
        config=config.to_dict(),
    )
    try:
        load_checkpoint(ctx, learner)
    except ValueError:  # a checkpoint this run cannot start from: it fails, saying why
        env.close()
        raise
    progress = {"episode": 0, "step": 0}
    returns: list[float] = []
    total_steps = 0
    status = "completed"
    heartbeat = Heartbeat(emitter, config.heartbeat_interval, progress=lambda: dict(progress))
    if ctx.control is not None:
        ctx.control.on_checkpoint(lambda: save_checkpoint(ctx, progress, returns, learner))
    try:
        with heartbeat:
            for episode in range(config.episodes):
                # Seed only the first reset: later episodes continue the same random stream,
                # so the whole run is reproducible from one seed.
                obs, _ = env.reset(seed=config.seed if episode == 0 else None)
                episode_return, steps, done = 0.0, 0, False
                terminated = truncated = False
                while not done:
                    if ctx.cancelled:
                        break
                    action = choose_action(config, env, obs, learner)
                    obs, reward, terminated, truncated, _ = env.step(action)
                    episode_return += float(reward)
                    if learner is not None:
                        learner.reward(float(reward))
                    done = bool(terminated or truncated)
                    emitter.step(
                        episode,
                        steps,
                        float(reward),
                        terminated=bool(terminated),
                        truncated=bool(truncated),
                        action=action,
                        observation=obs if config.include_observations else None,
                    )
                    steps += 1
                    total_steps += 1
                    progress.update(episode=episode, step=total_steps)
                    if config.step_delay_ms:
                        time.sleep(config.step_delay_ms / 1000.0)
                if ctx.cancelled:
                    status = "cancelled"
                    break
                returns.append(episode_return)
                emitter.episode(
                    episode,
                    episode_return,
                    steps,
                    terminated=bool(terminated),
                    truncated=bool(truncated),
                )
                if learner is not None:  # one update per episode; its numbers as series
                    emitter.metrics(learner.update(), step=total_steps)
    finally:
        env.close()

    duration = time.monotonic() - started
    save_checkpoint(ctx, progress, returns, learner)
    manifest = AnalyticsManifest.build(
        run_id=config.run_id,
        worker_type="example",
        status=status,
        returns=returns,
        steps=total_steps,
        duration_seconds=duration,
        env_id=config.env_id,
        algo=config.policy,
        seed=config.seed,
    )
    write_analytics(ctx.run_dir, manifest)
    if status == "cancelled":
        emitter.run_cancelled(reason=ctx.stop_reason, completed_episodes=len(returns))
        return
    emitter.run_completed(
        episodes=len(returns),
        total_reward=sum(returns),
        duration_seconds=duration,
        final_metrics={"mean_return": manifest.mean_return, "steps": total_steps},
    )
