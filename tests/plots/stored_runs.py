"""Stores with runs written row by row, as the runner's writer would leave them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mosaic_sdk.runner.storage.schema import INSERT_EPISODE, INSERT_EVENT, INSERT_STEP
from mosaic_sdk.runner.storage.store import RunStore

STARTED = 1_750_000_000.0  # the runs' start, unix seconds


def add_run(
    path: Path,
    run_id: str,
    *,
    worker: str = "example",
    config: dict[str, Any] | None = None,
    returns: Sequence[float | None] = (),
    steps: Sequence[int | None] | None = None,
    seconds: Sequence[float | None] | None = None,
) -> str:
    """Add a completed run with one episode row per return (``steps`` each episode's length,
    default 10; ``seconds`` each episode line's time after the start, default 1 s apart)."""
    config = {"run_id": run_id, **(config or {})}
    steps = [10] * len(returns) if steps is None else steps
    seconds = [float(i + 1) for i in range(len(returns))] if seconds is None else seconds
    with RunStore(path) as store:
        store.create_run(run_id, worker, config=config)
        store.conn.execute(
            "UPDATE runs SET started_at = ?, ended_at = ?, status = 'completed',"
            " episodes = ? WHERE run_id = ?",
            (STARTED, STARTED + 100, len(returns), run_id),
        )
        rows = []
        for i, (ret, n, sec) in enumerate(zip(returns, steps, seconds, strict=True)):
            ts = None if sec is None else int(STARTED * 1e9) + int(sec * 1e9)
            raw = json.dumps({"type": "episode", "episode_index": i, "total_reward": ret})
            # line 1 is run_started; agent_id stays NULL; a finished episode (unfinished 0)
            rows.append((run_id, i + 2, i + 2, i, ret, n, 1, 0, ts, raw, None, 0))
        store.conn.executemany(INSERT_EPISODE, rows)
    return run_id


def add_rows(path: Path, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert rows into ``steps``, ``episodes`` or ``events`` as they are (a step or episode
    row without ``agent_id`` gets NULL there; an episode row without ``unfinished``, 0)."""
    sql = {"steps": INSERT_STEP, "episodes": INSERT_EPISODE, "events": INSERT_EVENT}[table]
    width = sql.count("?")
    ends = (None, 0) if table == "episodes" else (None,)
    with RunStore(path) as store:
        store.conn.executemany(
            sql, [(*row, *ends[len(ends) - (width - len(row)) :]) for row in rows]
        )
