"""``mode: "interactive"``: play a trained checkpoint step by step over the control protocol.

The checkpoint (``policy_path``) is loaded by the same code as ``policy_eval``
(:func:`cleanrl_worker.evaluation.load_policy`); the env is the checkpoint's (or the config's
``env_id`` when given), made with ``render_mode="rgb_array"`` and wrapped for FastLane when it
is on (every step's frame is published). The policy acts greedily, so a seeded ``reset``
followed by ``step`` commands replays the same episode. The SDK serves the rest
(:mod:`mosaic_sdk.control.interactive`): protocol version 1, and the deployed interactive
dialect 1.0 the platform's GUI speaks (``init``/``ready``/``step``/``episode_done``/...).
"""

from __future__ import annotations

import os
from typing import Any

from cleanrl_worker.config import CleanRLConfig
from mosaic_sdk.control.interactive import InteractiveSession
from mosaic_sdk.worker_cli import RunContext


def greedy_policy(agent: Any) -> Any:
    """``observation -> action``: the agent's most likely action."""
    import numpy as np
    import torch

    def act(observation: Any) -> int:
        with torch.no_grad():
            logits = agent.actor(agent.prepare(np.asarray(observation)[None]))
        return int(logits.argmax(dim=-1).item())

    return act


def interactive_session(ctx: RunContext) -> InteractiveSession:
    """The session ``worker_main`` serves for ``mode: "interactive"``."""
    import gymnasium

    from cleanrl_worker.evaluation import load_policy
    from cleanrl_worker.fastlane_settings import resolve_fastlane
    from mosaic_sdk.fastlane import maybe_wrap_env
    from mosaic_sdk.fastlane.environment import FastLaneSettings

    config = ctx.config
    assert isinstance(config, CleanRLConfig)
    agent, data = load_policy(config.policy_path or "")
    env_id = config.env_id if "env_id" in config.model_fields_set else data["env_id"]
    env = gymnasium.make(env_id, render_mode="rgb_array")
    settings = resolve_fastlane(config, os.environ)
    if settings is not None:
        keep = ("video_mode", "slot", "grid_limit", "max_dim")
        chosen = FastLaneSettings(
            enabled=True,
            interval_ms=0.0,  # the player looks at every step
            **{key: settings[key] for key in keep},
        )
        env = maybe_wrap_env(env, run_id=config.run_id, settings=chosen)
    ctx.emitter.checkpoint_loaded(
        checkpoint_path=os.path.abspath(config.policy_path or ""),
        step=int(data.get("global_step", 0)),
    )
    return InteractiveSession(
        env,
        greedy_policy(agent),
        info={"env_id": env_id, "algo": config.algo, "policy_path": config.policy_path},
    )


__all__ = ["greedy_policy", "interactive_session"]
