"""``policy_eval``: load a checkpoint of our PPO, play N episodes, report each and a summary.

The env is made through the same patches as a training run, so every episode arrives as an
episode line and FastLane shows the play. Actions are greedy (``eval_deterministic``) or
sampled. Each episode's return and its discounted return (``eval_gamma``) go into
``run_completed`` and ``analytics.json``; ``eval_capture_video`` records the episodes into
``videos/`` in the run directory (needs ``moviepy``).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from cleanrl_worker.analytics import write_analytics
from cleanrl_worker.config import CleanRLConfig
from mosaic_sdk.telemetry import Heartbeat
from mosaic_sdk.worker_cli import RunContext


def load_policy(path: str) -> tuple[Any, dict[str, Any]]:
    """The PPO agent stored in ``path`` (CPU, eval mode) and the checkpoint dict."""
    import torch

    from cleanrl_worker.algorithms.ppo import Agent, load_checkpoint

    data = load_checkpoint(path, torch.device("cpu"))
    agent = Agent(data["obs_size"], data["n_actions"], data["hidden_size"], data["one_hot"])
    agent.load_state_dict(data["agent"])
    agent.eval()
    return agent, data


def run_policy_eval(ctx: RunContext) -> None:
    import gymnasium
    import torch

    from cleanrl_worker.runtime import install_instrumentation, make_sink

    config = ctx.config
    assert isinstance(config, CleanRLConfig)
    emitter = ctx.emitter
    started = time.monotonic()
    agent, data = load_policy(config.policy_path or "")
    env_id = config.env_id if "env_id" in config.model_fields_set else data["env_id"]
    sink = make_sink(ctx, config)
    inst = install_instrumentation(ctx, config, sink, compat=False)
    returns: list[float] = []
    discounted: list[float] = []
    status = "completed"
    try:
        env = gymnasium.make(env_id, render_mode="rgb_array" if config.eval_capture_video else None)
        if config.eval_capture_video:
            env = gymnasium.wrappers.RecordVideo(
                env, str(ctx.run_dir / "videos"), episode_trigger=lambda _: True
            )
        emitter.run_started(
            worker_type="cleanrl", algo=config.algo, env_id=env_id, seed=config.seed,
            config=config.to_dict(), mode="policy_eval",
        )  # fmt: skip
        emitter.checkpoint_loaded(
            checkpoint_path=str(Path(config.policy_path or "").resolve()),
            step=int(data.get("global_step", 0)),
        )
        with Heartbeat(emitter, config.heartbeat_interval, progress=sink.progress):
            for episode in range(config.eval_episodes):
                seed = None if config.seed is None else config.seed + episode
                obs, _ = env.reset(seed=seed)
                total, disc, scale, done = 0.0, 0.0, 1.0, False
                while not done and not ctx.cancelled:
                    with torch.no_grad():
                        logits = agent.actor(agent.prepare(obs[None]))
                    if config.eval_deterministic:
                        action = int(logits.argmax(dim=-1).item())
                    else:
                        action = int(torch.distributions.Categorical(logits=logits).sample())
                    obs, reward, terminated, truncated, _ = env.step(action)
                    total += float(reward)
                    disc += scale * float(reward)
                    scale *= config.eval_gamma
                    done = bool(terminated or truncated)
                if ctx.cancelled:
                    status = "cancelled"
                    break
                returns.append(total)
                discounted.append(disc)
        env.close()
    finally:
        inst.uninstall()
    duration = time.monotonic() - started
    summary = {
        "returns": returns,
        "discounted_returns": discounted,
        "mean_return": statistics.fmean(returns) if returns else None,
        "std_return": statistics.pstdev(returns) if returns else None,
        "min_return": min(returns) if returns else None,
        "max_return": max(returns) if returns else None,
        "mean_discounted_return": statistics.fmean(discounted) if discounted else None,
    }
    write_analytics(ctx.run_dir, config, sink, [], duration, status, {"evaluation": summary})
    if status == "cancelled":
        emitter.run_cancelled(reason="cancelled", completed_episodes=len(returns))
        return
    emitter.run_completed(
        episodes=len(returns),
        total_reward=sum(returns),
        duration_seconds=duration,
        final_metrics=summary,
    )


__all__ = ["load_policy", "run_policy_eval"]
