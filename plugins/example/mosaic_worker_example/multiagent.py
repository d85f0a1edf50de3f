"""The multi-agent example worker: a PettingZoo parallel env, one telemetry row per agent.

`python -m mosaic_worker_example.multiagent --config PATH [--dry-run] [--worker-id ID] [-v]`
runs it; `mosaic run example_ma` does the same through the runner. Read it top to bottom:

    run_started (with the run's ``agents``), then per step one step line per acting agent
    (``agent_id`` on every line), per episode one episode line per agent, heartbeats, and
    run_completed with the counts per agent (``agents``), or run_cancelled when stopped.

FastLane, when on: each agent's own view goes to its stream (``agent_stream_id(run_id, i)``,
the agent's position in ``agents``) and the tile of all views to the run's own segment.
The env is ``cooperative_pong_v6`` from ``pettingzoo.butterfly`` (two paddles; needs pygame,
which gymnasium's classic-control extra brings; no ROMs, no licence): the package's
``multiagent`` extra installs it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.contract import WorkerCapabilities, WorkerConfig, WorkerMetadata

if TYPE_CHECKING:
    from mosaic_sdk.fastlane import FastLaneWriter
from mosaic_sdk.telemetry import Heartbeat
from mosaic_sdk.worker_cli import RunContext, worker_main
from mosaic_worker_example import __version__

WORKER_TYPE = "example_ma"
#: The PettingZoo parallel envs this worker knows, by the name its config uses.
ENVS = {"cooperative_pong_v6": "pettingzoo.butterfly.cooperative_pong_v6"}


class MultiAgentConfig(WorkerConfig):
    env_id: Literal["cooperative_pong_v6"] = Field(
        "cooperative_pong_v6", description="The PettingZoo parallel env (pettingzoo.butterfly)"
    )
    episodes: int = Field(3, ge=1, le=1_000_000, description="Episodes to run")
    max_cycles: int = Field(
        200, ge=1, le=100_000, description="Steps after which the env truncates an episode"
    )
    step_every: int = Field(1, ge=1, description="Write every Nth step line (episode ends always)")
    heartbeat_interval: float | None = Field(
        None, gt=0, description="Seconds between heartbeats (None: MOSAIC_HEARTBEAT_INTERVAL or 30)"
    )
    step_delay_ms: float = Field(0.0, ge=0, description="Sleep per step, to watch a slow run")
    fastlane: bool | None = Field(
        None,
        description="Publish frames to FastLane (one stream per agent and the tile of all): "
        "true on, false off, null (default) as the launcher says",
    )


def make_env(config: MultiAgentConfig) -> Any:
    """The parallel env. Its observations are RGB frames (each agent's view) in any case, so
    it always renders in ``rgb_array`` mode (without one it warns on every step)."""
    import importlib

    module = importlib.import_module(ENVS[config.env_id])
    return module.parallel_env(max_cycles=config.max_cycles, render_mode="rgb_array")


class AgentStreams:
    """FastLane for a multi-agent run: one writer per agent plus the run's own (the tile).

    Frames go out at most once per ``interval_ms`` (the FastLane setting); HUD numbers are each
    agent's last reward and its return so far in the episode.
    """

    def __init__(self, run_id: str, agents: Sequence[str], interval_ms: float) -> None:
        from mosaic_sdk.fastlane import agent_stream_id

        self.run_id = run_id
        self.streams = {a: agent_stream_id(run_id, i) for i, a in enumerate(agents)}
        self.interval = interval_ms / 1000.0
        self.writers: dict[str, FastLaneWriter] = {}
        self.last = -float("inf")

    def publish(
        self, frames: dict[str, Any], rewards: dict[str, float], returns: dict[str, float]
    ) -> None:
        import numpy as np

        from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneWriter, tile_frames

        now = time.monotonic()
        if now - self.last < self.interval or not frames:
            return
        self.last = now
        out = {a: (self.streams[a], f) for a, f in frames.items() if a in self.streams}
        out[""] = (self.run_id, tile_frames([np.asarray(f) for f in frames.values()]))
        for key, (stream, frame) in out.items():
            frame = np.ascontiguousarray(frame, dtype=np.uint8)
            writer = self.writers.get(key)
            if writer is None:
                h, w, c = frame.shape
                writer = FastLaneWriter.create(
                    stream, FastLaneConfig(width=w, height=h, channels=c)
                )
                self.writers[key] = writer
            if key:
                metrics = FastLaneMetrics(rewards.get(key, 0.0), returns.get(key, 0.0), 0.0)
            else:
                metrics = FastLaneMetrics(sum(rewards.values()), sum(returns.values()), 0.0)
            writer.publish(frame, metrics=metrics)

    def close(self) -> None:
        for writer in self.writers.values():
            writer.unlink()  # the segments go with the run (readers see them invalidated)
            writer.close()
        self.writers.clear()


def run(ctx: RunContext) -> None:
    config = ctx.config
    assert isinstance(config, MultiAgentConfig)
    emitter = ctx.emitter
    emitter.step_every = config.step_every
    started = time.monotonic()

    from mosaic_sdk.fastlane import resolve_fastlane

    fastlane = resolve_fastlane(config.fastlane)
    env = make_env(config)
    agents = list(env.possible_agents)
    emitter.run_started(
        worker_type=WORKER_TYPE,
        algo="random",
        env_id=config.env_id,
        seed=config.seed,
        config=config.to_dict(),
        agents=agents,
    )
    streams = AgentStreams(config.run_id, agents, fastlane.interval_ms) if fastlane else None
    for i, agent in enumerate(agents):
        env.action_space(agent).seed(None if config.seed is None else config.seed + i)
    counts = {a: {"episodes": 0, "steps": 0, "total_reward": 0.0} for a in agents}
    returns: list[float] = []  # the team's return per episode (the sum over agents)
    agent_returns: dict[str, list[float]] = {a: [] for a in agents}  # each agent's
    progress = {"episode": 0, "step": 0}
    total_steps = 0
    status = "completed"
    heartbeat = Heartbeat(emitter, config.heartbeat_interval, progress=lambda: dict(progress))
    try:
        with heartbeat:
            for episode in range(config.episodes):
                obs, _ = env.reset(seed=config.seed if episode == 0 else None)
                ep_return = dict.fromkeys(agents, 0.0)
                ep_steps = dict.fromkeys(agents, 0)
                ended: dict[str, tuple[bool, bool]] = {}
                while env.agents:
                    if ctx.cancelled:
                        break
                    actions = {a: env.action_space(a).sample() for a in env.agents}
                    obs, rewards, terms, truncs, _ = env.step(actions)
                    for agent, action in actions.items():
                        reward = float(rewards.get(agent, 0.0))
                        term, trunc = bool(terms.get(agent)), bool(truncs.get(agent))
                        emitter.step(
                            episode,
                            ep_steps[agent],
                            reward,
                            terminated=term,
                            truncated=trunc,
                            action=int(action),
                            agent_id=agent,
                        )
                        ep_return[agent] += reward
                        ep_steps[agent] += 1
                        if term or trunc:
                            ended[agent] = (term, trunc)
                    if streams is not None:
                        streams.publish(
                            {a: obs[a] for a in agents if a in obs},
                            {a: float(r) for a, r in rewards.items()},
                            ep_return,
                        )
                    total_steps += 1
                    progress.update(episode=episode, step=total_steps)
                    if config.step_delay_ms:
                        time.sleep(config.step_delay_ms / 1000.0)
                if ctx.cancelled:
                    status = "cancelled"
                    break
                for agent in agents:
                    term, trunc = ended.get(agent, (False, True))
                    emitter.episode(
                        episode,
                        ep_return[agent],
                        ep_steps[agent],
                        terminated=term,
                        truncated=trunc,
                        agent_id=agent,
                    )
                    counts[agent]["episodes"] += 1
                    counts[agent]["steps"] += ep_steps[agent]
                    counts[agent]["total_reward"] += ep_return[agent]
                    agent_returns[agent].append(ep_return[agent])
                returns.append(sum(ep_return.values()))
    finally:
        env.close()
        if streams is not None:
            streams.close()

    duration = time.monotonic() - started
    manifest = AnalyticsManifest.build(
        run_id=config.run_id,
        worker_type=WORKER_TYPE,
        status=status,
        returns=returns,
        agent_returns=agent_returns,
        steps=total_steps,
        duration_seconds=duration,
        env_id=config.env_id,
        algo="random",
        seed=config.seed,
        extra={"agents": counts},
    )
    write_analytics(ctx.run_dir, manifest)
    if status == "cancelled":
        emitter.run_cancelled(
            reason=ctx.stop_reason, completed_episodes=len(returns), agents=counts
        )
        return
    emitter.run_completed(
        episodes=len(returns),
        total_reward=sum(returns),
        duration_seconds=duration,
        final_metrics={"mean_return": manifest.mean_return, "steps": total_steps},
        agents=counts,
    )


def check_config(config: WorkerConfig) -> str:
    """Dry-run check: PettingZoo and the env's own packages import."""
    assert isinstance(config, MultiAgentConfig)
    import importlib

    try:
        importlib.import_module(ENVS[config.env_id])
    except ImportError as exc:
        raise ValueError(
            f"env {config.env_id!r} cannot be imported ({exc}); install the multi-agent extra: "
            "pip install 'mosaic-worker-example[multiagent]'"
        ) from None
    return f"{config.episodes} episode(s) of {config.env_id}, random actions per agent"


def describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    metadata = WorkerMetadata(
        name="Example Multi-Agent Worker",
        version=__version__,
        description="Runs a PettingZoo parallel env with random agents and reports per-agent "
        "telemetry and one FastLane stream per agent",
        author="mosaic-worker-sdk developers",
        upstream_library="pettingzoo",
        license="MIT",
    )
    capabilities = WorkerCapabilities(
        worker_type=WORKER_TYPE,  # must equal the entry-point name
        supported_paradigms=("simultaneous",),
        env_families=("pettingzoo", "butterfly"),
        action_spaces=("discrete",),
        observation_spaces=("image",),
        max_agents=2,
        supports_fastlane=True,
        supports_pause_resume=True,
        control_protocol=1,
        estimated_memory_mb=256,
    )
    return metadata, capabilities


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(
        config_model=MultiAgentConfig,
        run=run,
        capabilities=describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog="mosaic_worker_example.multiagent",
    )


if __name__ == "__main__":
    sys.exit(main())
