"""``policy_eval``: load a policy, play N episodes in batches, report each and a summary.

The policy is anything :func:`mosaic_worker_cleanrl.agents.load_policy` reads: a checkpoint of our
PPO (MLP or MiniGrid CNN agent, old or new) or a bare state dict. The env is made through the
same patches as a training run (every episode arrives as an episode line; FastLane shows the
play) and through :func:`~mosaic_worker_cleanrl.env_families.wrap_observations` (MiniGrid's image).
Actions are greedy (``eval_deterministic``) or sampled.

Episodes run in batches of ``eval_batch_size``: after each batch a ``policy_eval_batch``
lifecycle event and a refresh of ``eval_summary.json`` (at most once a second; see
:mod:`mosaic_worker_cleanrl.eval_summary`). Each episode's return and its discounted return
(``eval_gamma``) go into ``run_completed`` and ``analytics.json``; ``eval_capture_video``
records the episodes into ``videos/`` in the run directory (needs ``moviepy``).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import gymnasium

from mosaic_sdk.telemetry import Heartbeat
from mosaic_sdk.worker_cli import RunContext
from mosaic_worker_cleanrl.analytics import write_analytics
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.env_families import register_env_families, wrap_observations
from mosaic_worker_cleanrl.eval_summary import EvalSummary
from mosaic_worker_cleanrl.run_setup import install_instrumentation, make_sink


def eval_env_id(config: CleanRLConfig, policy: Any) -> str:
    """The config's ``env_id`` when it sets one, else the checkpoint's."""
    if "env_id" in config.model_fields_set or policy.env_id is None:
        return config.env_id
    return str(policy.env_id)


def make_eval_env(env_id: str, capture_video: bool = False, video_dir: Path | None = None) -> Any:
    """The env ``policy_eval`` plays (through the current ``gymnasium.make``, patched or not)."""

    register_env_families()
    env = gymnasium.make(env_id, render_mode="rgb_array" if capture_video else None)
    if capture_video:
        env = gymnasium.wrappers.RecordVideo(env, str(video_dir), episode_trigger=lambda _: True)
    return wrap_observations(env)


def play_episode(env: Any, policy: Any, seed: int | None, gamma: float,
                 deterministic: bool, cancelled: Any) -> tuple[float, float] | None:  # fmt: skip
    """(return, discounted return) of one episode; ``None`` when cancelled midway."""
    obs, _ = env.reset(seed=seed)
    total, disc, scale, done = 0.0, 0.0, 1.0, False
    while not done:
        if cancelled():
            return None
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs, deterministic))
        total += float(reward)
        disc += scale * float(reward)
        scale *= gamma
        done = bool(terminated or truncated)
    return total, disc


def run_policy_eval(ctx: RunContext) -> None:
    import torch  # torch only for policy_eval (start-up time)

    from mosaic_worker_cleanrl.agents import load_policy
    from mosaic_worker_cleanrl.agents.spaces import check_fits

    config = ctx.config
    assert isinstance(config, CleanRLConfig)
    emitter = ctx.emitter
    started = time.monotonic()
    # One forward pass per step of a small network: torch's thread pool only adds contention
    # (20 ms of CPU per step on a busy 2-core machine, against under 1 ms on one thread).
    torch.set_num_threads(1)
    if config.seed is not None:  # sampled actions (eval_deterministic false) repeat too
        torch.manual_seed(config.seed)
    policy_path = str(Path(config.policy_path or "").resolve())
    policy = load_policy(policy_path)
    env_id = eval_env_id(config, policy)
    sink = make_sink(ctx, config)
    inst = install_instrumentation(ctx, config, sink, compat=False)
    summary_file = EvalSummary(
        ctx.run_dir, run_id=config.run_id, env_id=env_id, policy_path=policy_path,
        batch_size=config.eval_batch_size, episodes_planned=config.eval_episodes,
    )  # fmt: skip
    returns: list[float] = []
    discounted: list[float] = []
    status = "completed"
    try:
        env = make_eval_env(env_id, config.eval_capture_video, ctx.run_dir / "videos")
        check_fits(policy.agent, env, where=config.policy_path or "the policy")
        emitter.run_started(
            worker_type="cleanrl", algo=config.algo, env_id=env_id, seed=config.seed,
            config=config.to_dict(), mode="policy_eval", agent=policy.kind,
        )  # fmt: skip
        emitter.checkpoint_loaded(checkpoint_path=policy_path, step=policy.global_step)
        with Heartbeat(emitter, config.heartbeat_interval, progress=sink.progress):
            batch: list[float] = []
            for episode in range(config.eval_episodes):
                seed = None if config.seed is None else config.seed + episode
                played = play_episode(env, policy, seed, config.eval_gamma,
                                      config.eval_deterministic, lambda: ctx.cancelled)  # fmt: skip
                if played is None or ctx.cancelled:
                    status = "cancelled"
                    break
                returns.append(played[0])
                discounted.append(played[1])
                batch.append(played[0])
                if len(batch) == config.eval_batch_size or episode == config.eval_episodes - 1:
                    emitter.lifecycle("policy_eval_batch", summary_file.add_batch(batch))
                    batch = []
        env.close()
    except BaseException:
        summary_file.write("failed")
        raise
    finally:
        inst.uninstall()
    summary_file.write(status)
    duration = time.monotonic() - started
    summary = {
        "returns": returns,
        "discounted_returns": discounted,
        "mean_return": statistics.fmean(returns) if returns else None,
        "std_return": statistics.pstdev(returns) if returns else None,
        "min_return": min(returns) if returns else None,
        "max_return": max(returns) if returns else None,
        "mean_discounted_return": statistics.fmean(discounted) if discounted else None,
        "batches": summary_file.batches,
        "agent": policy.kind,
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


__all__ = ["eval_env_id", "make_eval_env", "play_episode", "run_policy_eval"]
