"""``mode: "interactive"``: play a trained checkpoint step by step over the control protocol.

The checkpoint (``policy_path``) is loaded by the same code as ``policy_eval``
(:func:`mosaic_worker_cleanrl.agents.load_policy`: an MLP or MiniGrid CNN agent, as the checkpoint
records); the env is the checkpoint's (or the config's ``env_id`` when given), made with
``render_mode="rgb_array"`` and wrapped for FastLane when it is on, with the run's frame
interval (``fastlane_interval_ms``, else ``MOSAIC_FASTLANE_INTERVAL_MS``, else 16 ms; 0
publishes every step's frame): the session publishes a skipped step's frame once stepping
pauses, so the latest state is always shown. The policy acts greedily, so a seeded ``reset``
followed by ``step`` commands replays the same episode. The SDK serves the rest
(:mod:`mosaic_sdk.control.interactive`): protocol version 1, and the deployed interactive
dialect 1.0 the platform's GUI speaks (``init``/``ready``/``step``/``episode_done``/...).
"""

from __future__ import annotations

import os
from typing import Any

from mosaic_sdk.control.interactive import InteractiveSession
from mosaic_sdk.worker_cli import RunContext
from mosaic_worker_cleanrl.config import CleanRLConfig


def greedy_policy(policy: Any) -> Any:
    """``observation -> action``: the loaded policy's most likely action (a seeded reset then
    replays the same episode)."""

    def act(observation: Any) -> int:
        return int(policy.act(observation, deterministic=True))

    return act


def interactive_session(ctx: RunContext) -> InteractiveSession:
    """The session ``worker_main`` serves for ``mode: "interactive"``."""
    import gymnasium  # torch and gymnasium only in interactive mode (start-up time)

    # torch and gymnasium only in interactive mode (start-up time)
    from mosaic_sdk.fastlane.environment import FastLaneSettings
    from mosaic_sdk.plugins import maybe_wrap_env
    from mosaic_worker_cleanrl.agents import load_policy
    from mosaic_worker_cleanrl.agents.spaces import check_fits
    from mosaic_worker_cleanrl.env_families import register_env_families, wrap_observations
    from mosaic_worker_cleanrl.evaluation import eval_env_id
    from mosaic_worker_cleanrl.fastlane_settings import resolve_fastlane

    config = ctx.config
    assert isinstance(config, CleanRLConfig)
    policy_path = os.path.abspath(config.policy_path or "")
    policy = load_policy(policy_path)  # MLP or MiniGrid CNN, as the checkpoint records
    env_id = eval_env_id(config, policy)
    register_env_families()
    env = gymnasium.make(env_id, render_mode="rgb_array")
    settings = resolve_fastlane(config, os.environ)
    if settings is not None:
        chosen = FastLaneSettings(enabled=True, **settings)  # the hook settings, as decided
        env = maybe_wrap_env(env, run_id=config.run_id, settings=chosen)
    env = wrap_observations(env)  # MiniGrid: the image the CNN agent reads
    check_fits(policy.agent, env, where=config.policy_path or "the policy")
    ctx.emitter.checkpoint_loaded(checkpoint_path=policy_path, step=int(policy.global_step))
    return InteractiveSession(
        env,
        greedy_policy(policy),
        info={"env_id": env_id, "algo": config.algo, "policy_path": config.policy_path},
    )


__all__ = ["greedy_policy", "interactive_session"]
