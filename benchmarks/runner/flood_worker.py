"""A worker that writes step lines as fast as it can, for the runner benchmarks.

Registered through ``MOSAIC_PLUGINS=flood=flood_worker:FloodWorker`` with this directory on
``PYTHONPATH``; its child is this file run as a script. Config: ``lines`` (step lines to
write), ``episode_length`` (an episode line every that many steps), ``agents`` (with more than
one, a multi-agent run as the ``example_ma`` worker writes it: ``run_started`` declares the
agents, each env step writes one step line per agent with its ``agent_id``, each episode one
episode line per agent, and ``run_completed`` carries the counts per agent; ``lines`` is then
the step lines of all agents together, ``episode_length`` the steps of one agent's episode),
``series_every`` (with N > 0, one ``metrics`` line of two series, ``losses/value`` and
``charts/sps``, after every N step lines: the series benchmark; single-agent runs only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import Field

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata


class FloodConfig(WorkerConfig):
    lines: int = Field(1_000_000, ge=0)
    episode_length: int = Field(1000, ge=1)
    agents: int = Field(1, ge=1)
    series_every: int = Field(0, ge=0)


class FloodWorker:
    @hookimpl
    def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        return WorkerMetadata(name="Flood", version="1.0"), WorkerCapabilities(worker_type="flood")

    @hookimpl
    def mosaic_worker_config_model(self) -> type[WorkerConfig]:
        return FloodConfig

    @hookimpl
    def mosaic_worker_launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        return LaunchCommand(argv=(sys.executable, __file__, str(config_path)))


def flood(run_id: str, lines: int, episode_length: int, series_every: int = 0) -> None:
    from mosaic_sdk.telemetry import TelemetryEmitter

    with TelemetryEmitter(run_id, sys.stdout) as em:
        em.run_started(worker_type="flood")
        step = em.step
        metrics = em.metrics
        episode = 0
        for i in range(lines):
            t = i % episode_length
            end = t == episode_length - 1
            step(episode, t, 1.0, terminated=end)
            if series_every and i % series_every == series_every - 1:
                metrics({"losses/value": 1.0 / (i + 1), "charts/sps": float(i)}, step=i)
            if end:
                em.episode(episode, float(episode_length), episode_length, terminated=True)
                episode += 1
        em.run_completed(episodes=episode, total_reward=float(lines), duration_seconds=0.0)


def agent_names(agents: int) -> list[str]:
    """The agents of a multi-agent flood run, in the order ``run_started`` declares them."""
    return [f"agent_{i}" for i in range(agents)]


def flood_agents(run_id: str, lines: int, episode_length: int, agents: int) -> None:
    """``lines`` step lines in all, one per agent per env step (``agent_id`` on each), and one
    episode line per agent every ``episode_length`` env steps: what ``example_ma`` writes."""
    from mosaic_sdk.telemetry import TelemetryEmitter

    names = agent_names(agents)
    steps = lines // agents
    with TelemetryEmitter(run_id, sys.stdout) as em:
        em.run_started(worker_type="flood", agents=names)
        step = em.step
        episode = 0
        for i in range(steps):
            t = i % episode_length
            end = t == episode_length - 1
            for name in names:
                step(episode, t, 1.0, terminated=end, agent_id=name)
            if end:
                for name in names:
                    em.episode(
                        episode,
                        float(episode_length),
                        episode_length,
                        terminated=True,
                        agent_id=name,
                    )
                episode += 1
        counts = {
            name: {"episodes": episode, "steps": steps, "total_reward": float(steps)}
            for name in names
        }
        em.run_completed(
            episodes=episode,
            total_reward=float(steps * agents),
            duration_seconds=0.0,
            agents=counts,
        )


if __name__ == "__main__":
    cfg = json.loads(Path(sys.argv[1]).read_text())
    args = (cfg["run_id"], int(cfg.get("lines", 1_000_000)), int(cfg.get("episode_length", 1000)))
    agents = int(cfg.get("agents", 1))
    if agents > 1:
        flood_agents(*args, agents)
    else:
        flood(*args, int(cfg.get("series_every", 0)))
