"""A worker whose best configuration is known, for the sweep tests and benchmarks: episode ``i``
returns ``-((x - 0.7)^2 + (y - 0.2)^2) * 100`` (the bowl, best at x = 0.7, y = 0.2), plus
``shift`` (a choice key), and reports a ``metrics`` series ``score`` after each episode ``i``
of ``n`` (the value minus ``n - 1 - i``: it rises to the value), ``loss`` (minus the
value) and ``cost`` (``x``: a second objective at odds with the first below x = 0.7).
``episode_delay_s`` makes it slow enough to be stopped early. Registered as ``bowl`` through
MOSAIC_PLUGINS=bowl=bowl_worker:Bowl."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pydantic import Field

from mosaic_sdk.contract import WorkerConfig

THIS = Path(__file__).resolve()
OPTIMUM = {"x": 0.7, "y": 0.2}


class BowlConfig(WorkerConfig):
    x: float = Field(0.0, ge=0, le=1)
    y: float = Field(0.0, ge=0, le=1)
    shift: float = 0.0
    episodes: int = Field(3, ge=1)
    episode_delay_s: float = Field(0.0, ge=0)
    #: A zero-sum game of two agents: player_0 gets the bowl's value, player_1 its negation
    #: (episodes and the ``score`` series per agent; the mean over agents is always 0).
    two_players: bool = False


def value(x: float, y: float, shift: float = 0.0) -> float:
    """The return of every episode of a trial with these parameters."""
    return -((x - OPTIMUM["x"]) ** 2 + (y - OPTIMUM["y"]) ** 2) * 100 + shift


def _plugin():  # imported lazily: the child process needs no pluggy
    from mosaic_sdk import hookimpl
    from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerMetadata

    class Bowl:
        @hookimpl
        def mosaic_worker_describe(self):
            return (
                WorkerMetadata(name="bowl", version="1.0"),
                WorkerCapabilities(worker_type="bowl"),
            )

        @hookimpl
        def mosaic_worker_config_model(self):
            return BowlConfig

        @hookimpl
        def mosaic_worker_launch_command(self, config_path, config, run_dir):
            return LaunchCommand(argv=(sys.executable, str(THIS), "--config", str(config_path)))

    return Bowl


def __getattr__(name: str):
    if name == "Bowl":
        return _plugin()
    raise AttributeError(name)


def run(ctx) -> None:  # type: ignore[no-untyped-def]
    em = ctx.emitter
    cfg = ctx.config
    em.run_started(worker_type="bowl", seed=cfg.seed)
    score = value(cfg.x, cfg.y, cfg.shift)
    for i in range(cfg.episodes):
        if ctx.cancelled:
            return
        if cfg.episode_delay_s:
            time.sleep(cfg.episode_delay_s)
        if cfg.two_players:
            for agent, sign in (("player_0", 1), ("player_1", -1)):
                em.episode(i, total_reward=sign * score, steps=i + 1, agent_id=agent)
                em.metrics({"score": sign * score}, step=i + 1, agent_id=agent)
            continue
        # the score improves over the episodes, towards the bowl's value: a learning curve
        em.episode(i, total_reward=score, steps=i + 1, terminated=True)
        em.metrics(
            {"score": score - (cfg.episodes - 1 - i), "loss": -score, "cost": cfg.x}, step=i + 1
        )
    em.run_completed(episodes=cfg.episodes, total_reward=score * cfg.episodes, duration_seconds=0.0)


if __name__ == "__main__":
    from mosaic_sdk.worker_cli import worker_main

    sys.exit(worker_main(config_model=BowlConfig, run=run, prog="bowl"))
