"""A run whose end cut its last episode off, written by the SDK's emitter and stored by the
runner's own ingest and writer: the tests of the rule of unfinished episodes share it.

Episode 0: 3 steps of reward 1 (terminated, return 3); episode 1: 2 steps of reward -5
(truncated by a time limit, return -10); episode 2: 4 steps of reward 0.5, cut off by the end
of the run (unfinished, partial return 2). run_completed counts the 2 finished episodes.
"""

from __future__ import annotations

import io
from pathlib import Path

from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.telemetry import TelemetryEmitter

#: The finished episodes' returns and steps, and the unfinished one's.
FINISHED_RETURNS = [3.0, -10.0]
FINISHED_STEPS = [3, 2]
PARTIAL_RETURN, PARTIAL_STEPS = 2.0, 4


def cut_run_lines(run_id: str = "CUT", agents: tuple[str, ...] = ()) -> list[str]:
    """The run's stdout lines (see the module docstring). ``agents``: a multi-agent run, each
    agent playing the same three episodes under its id."""
    out = io.StringIO()
    em = TelemetryEmitter(run_id, out, flush_interval=0)
    declared = {"agents": list(agents)} if agents else {}
    em.run_started(worker_type="fixture", algo="none", env_id="Pendulum-v1", seed=1, **declared)
    for agent in agents or (None,):
        for t in range(3):
            em.step(0, t, 1.0, terminated=t == 2, agent_id=agent)
        em.episode(0, 3.0, 3, terminated=True, agent_id=agent)
        for t in range(2):
            em.step(1, t, -5.0, truncated=t == 1, agent_id=agent)
        em.episode(1, -10.0, 2, truncated=True, agent_id=agent)
        for t in range(4):
            em.step(2, t, 0.5, agent_id=agent)
        # as emitter.episode(..., unfinished=True) writes it (and workers wrote it before)
        cut = {"unfinished": True}
        em.episode(2, PARTIAL_RETURN, PARTIAL_STEPS, truncated=True, metadata=cut, agent_id=agent)
    em.run_completed(episodes=2, total_reward=-7.0, duration_seconds=1.0)
    em.close()
    return out.getvalue().splitlines()


def store_cut_run(
    path: Path, run_id: str = "CUT", agents: tuple[str, ...] = ()
) -> tuple[LineIngest, list[str]]:
    """Store the run's lines in ``path`` as ``mosaic run`` does (one batch); the ingest (its
    live counters) and the lines."""
    return store_lines(path, run_id, cut_run_lines(run_id, agents))


def store_lines(
    path: Path, run_id: str, lines: list[str], config: dict[str, object] | None = None
) -> tuple[LineIngest, list[str]]:
    """Store ``lines`` as the completed run ``run_id`` (launched with ``config``) of
    ``path``, as ``mosaic run`` does (one batch); the ingest and the lines."""
    with RunStore(path) as store:
        store.create_run(run_id, "fixture", config=config)
    ingest, batch = LineIngest(run_id), LineBatch(serial=1)
    ingest.add(batch, [line.encode() for line in lines])
    writer = StoreWriter(path, run_id)
    writer.submit(batch)
    writer.close()
    assert writer.lost_rows == 0
    with RunStore(path) as store:
        store.finish_run(run_id, "completed", 0)
    return ingest, lines
