"""Filling a store the way the runner does (rows plus the run's counts), for mosaic watch's
tests: a run with chosen events, episodes and log lines, without running a worker."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from mosaic_sdk.runner.recording.ingest import LineIngest
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.schema import (
    INSERT_EPISODE,
    INSERT_EVENT,
    INSERT_LOG,
    INSERT_STEP,
    UPDATE_COUNTS,
)
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter


def metrics_line(
    values: dict[str, Any], step: int, agent_id: str | None = None, ts_ns: int | None = None
) -> str:
    """A ``metrics`` lifecycle line as ``TelemetryEmitter.metrics`` writes it."""
    payload: dict[str, Any] = {"step": step, "values": values}
    if agent_id is not None:
        payload["agent_id"] = agent_id
    line: dict[str, Any] = {"type": "lifecycle", "event": "metrics", "payload": payload}
    if ts_ns is not None:
        line["ts_unix_ns"] = ts_ns
    return json.dumps(line)


class FilledRun:
    """One run in a store; each ``add_*`` stores one line with the next line number."""

    def __init__(
        self,
        store: Path,
        run_id: str,
        worker: str = "example",
        config: dict[str, Any] | None = None,
        run_dir: Path | None = None,
        control_protocol: int | None = None,
    ) -> None:
        self.store, self.run_id, self.line_no = store, run_id, 0
        self._ingest: LineIngest | None = None  # the runner's own, for series (add_lines)
        with RunStore(store) as s:
            s.create_run(
                run_id,
                worker,
                config=config or {"env_id": "CartPole-v1"},
                run_dir=run_dir,
                control_protocol=control_protocol,
            )

    def _write(self, sql: str, row: tuple[Any, ...], counts: tuple[int, ...], ret: Any) -> None:
        conn = sqlite3.connect(self.store, isolation_level=None)
        try:
            conn.execute("BEGIN")
            conn.execute(sql, row)
            conn.execute(UPDATE_COUNTS, (1, *counts, ret, self.run_id))
            conn.execute("COMMIT")
        finally:
            conn.close()

    def add_event(
        self, event: str, payload: dict[str, Any] | None = None, synthesised: bool = False
    ) -> None:
        """One lifecycle line (``synthesised``: one the runner wrote, e.g. ``stalled``)."""
        self.line_no += 1
        text = json.dumps({"type": "lifecycle", "event": event, "payload": payload or {}})
        flag = 1 if synthesised else 0
        row = (self.run_id, self.line_no, self.line_no, event, 0, flag, json.dumps(payload), text)
        self._write(INSERT_EVENT, row, (0, 0, 0, 1, 0, 0, 0), None)

    def add_episode(
        self, total_reward: float, steps: int, agent_id: str | None = None, episode_index: int = 0
    ) -> None:
        self.line_no += 1
        line = {"type": "episode", "total_reward": total_reward, "steps": steps}
        if agent_id is not None:
            line["agent_id"] = agent_id
        text = json.dumps(line)
        row = (
            *(self.run_id, self.line_no, self.line_no, episode_index, total_reward, steps, 1, 0, 0),
            *(text, agent_id, 0),
        )
        self._write(INSERT_EPISODE, row, (0, 1, 0, 0, 0, 0, 0), total_reward)

    def add_step(self, reward: float, agent_id: str | None = None) -> None:
        self.line_no += 1
        text = json.dumps({"type": "step", "reward": reward, "agent_id": agent_id})
        row = (self.run_id, self.line_no, self.line_no, 0, 0, reward, 0, 0, 0, text, agent_id)
        self._write(INSERT_STEP, row, (1, 0, 0, 0, 0, 0, 0), None)

    def add_log(self, text: str, stream: str = "stdout") -> None:
        self.line_no += 1
        row = (self.run_id, stream, self.line_no, "log", 0, None, text)
        self._write(INSERT_LOG, row, (0, 0, 0, 0, 1, 0, 1 if stream == "stderr" else 0), None)

    def add_lines(self, lines: list[str]) -> None:
        """Worker lines through the runner's own ingest and store writer (series points of
        ``metrics`` and custom lifecycle events are made there), numbered after the rest."""
        if self._ingest is None:
            self._ingest = LineIngest(self.run_id)
        self._ingest.line_no = self.line_no
        batch = LineBatch(1)
        self._ingest.add(batch, [line.encode() for line in lines])
        writer = StoreWriter(self.store, self.run_id)
        writer.submit(batch)
        writer.close()
        assert writer.lost_rows == 0
        self.line_no = self._ingest.line_no

    def add_metrics(
        self,
        values: dict[str, Any],
        step: int,
        agent_id: str | None = None,
        ts_ns: int | None = None,
    ) -> None:
        self.add_lines([metrics_line(values, step, agent_id, ts_ns)])

    def finish(self, status: str = "completed") -> None:
        with RunStore(self.store) as s:
            s.finish_run(self.run_id, status, 0)
