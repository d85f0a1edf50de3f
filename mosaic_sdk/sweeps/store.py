"""Sweeps in the run store: the ``sweeps`` and ``sweep_trials`` tables."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from typing import Any

from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.store import RunStore, StoreError
from mosaic_sdk.shm.processes import process_alive
from mosaic_sdk.sweeps.objective import metric_of_run
from mosaic_sdk.sweeps.spec import Metric, SpecError, clip, parse_spec

#: Trial statuses that ``--resume`` does not run again.
FINISHED = ("completed", "failed", "stopped", "pruned")
#: The only status a sweep's best comes from, unless asked (``include_unfinished``): the
#: value of a pruned, stopped, cancelled or failed trial is that of a run cut short.
BEST_FROM = "completed"


class UnknownSweepError(StoreError):
    """No sweep with that id (or id prefix) is in the store."""


class DamagedSweepError(StoreError):
    """A sweep's row the tools cannot use (its spec, or a trial's parameters or metric, damaged
    in the store): one line naming the sweep, the trial and the field."""

    def __init__(self, sweep_id: str, field: str, problem: str, trial: str | None = None) -> None:
        where = f"sweep {sweep_id}" + (f", trial {trial}" if trial is not None else "")
        super().__init__(printable(f"{where}: {field} {problem} (a damaged row in the store)"))


def _json_object(text: object, sweep_id: str, field: str, trial: str | None = None) -> Any:
    """The JSON object stored in ``field``; ``DamagedSweepError`` when it is not one."""
    try:
        value = json.loads(text)  # type: ignore[arg-type]  # whatever the column holds
    except (TypeError, ValueError, RecursionError) as exc:
        raise DamagedSweepError(sweep_id, field, f"is not JSON ({clip(str(exc))})", trial) from None
    if not isinstance(value, dict):
        raise DamagedSweepError(
            sweep_id, field, f"is not a JSON object (a {type(value).__name__})", trial
        )
    return value


def _metric_value(value: object, sweep_id: str, trial: str) -> float | None:
    """A trial's stored metric: a number or NULL; ``DamagedSweepError`` for text or a blob."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    kind = "text" if isinstance(value, str) else f"a {type(value).__name__}"
    problem = f"is {kind} {clip(repr(value))}, not a number"
    raise DamagedSweepError(sweep_id, "metric", problem, trial)


class SweepStore:
    """Sweep rows on a :class:`~mosaic_sdk.runner.storage.store.RunStore`'s connection."""

    def __init__(self, runs: RunStore) -> None:
        self.runs = runs
        self.conn = runs.conn
        cursor = self.conn.cursor()
        cursor.row_factory = None
        have = {r[1] for r in cursor.execute("PRAGMA table_info(sweep_trials)")}
        #: the column, or NULL on a read-only store of schema 5 (not migrated)
        self._parent = "t.parent_run_id" if "parent_run_id" in have else "NULL"

    def create_sweep(
        self, sweep_id: str, worker: str, engine: str, spec: Mapping[str, object], metric: Metric
    ) -> None:
        spec_json = json.dumps(spec, sort_keys=True)
        driver = (os.getpid(), socket.gethostname())
        self.conn.execute(
            "INSERT INTO sweeps (sweep_id, worker, engine, status, created_at, spec_json,"
            " metric, mode, driver_pid, driver_host) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
            (sweep_id, worker, engine, time.time(), spec_json, metric.name, metric.mode, *driver),
        )

    def set_status(self, sweep_id: str, status: str, error: str | None = None) -> None:
        ended = None if status == "running" else time.time()
        self.conn.execute(
            "UPDATE sweeps SET status = ?, ended_at = ?, error = ?, driver_pid = ?,"
            " driver_host = ? WHERE sweep_id = ?",
            (status, ended, error, os.getpid(), socket.gethostname(), sweep_id),
        )

    def set_engine_state(self, sweep_id: str, state: str) -> None:
        """What the engine needs to resume (the Ray engine: its experiment directory)."""
        self.conn.execute(
            "UPDATE sweeps SET engine_state = ? WHERE sweep_id = ?", (state, sweep_id)
        )

    def add_attempt(
        self,
        sweep_id: str,
        trial_key: str,
        run_id: str,
        params: Mapping[str, object],
        node: str | None = None,
        parent_run_id: str | None = None,
    ) -> int:
        """Record a new attempt of a trial (status ``running``); returns its number (1, 2...).
        ``parent_run_id``: the run whose checkpoint this attempt's run starts from."""
        row = self.conn.execute(
            "SELECT coalesce(max(attempt), 0) + 1 AS n FROM sweep_trials"
            " WHERE sweep_id = ? AND trial_key = ?",
            (sweep_id, trial_key),
        ).fetchone()
        attempt = int(row["n"])
        params_json = json.dumps(params, sort_keys=True)
        self.conn.execute(
            "INSERT INTO sweep_trials (sweep_id, trial_key, attempt, run_id, params_json, status,"
            " node, parent_run_id) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
            (sweep_id, trial_key, attempt, run_id, params_json, node, parent_run_id),
        )
        return attempt

    def finish_attempt(
        self, run_id: str, status: str, metric: float | None, error: str | None = None
    ) -> None:
        self.conn.execute(
            "UPDATE sweep_trials SET status = ?, metric = ?, error = ? WHERE run_id = ?",
            (status, metric, error, run_id),
        )

    def mark_lost(self, sweep_id: str) -> int:
        """Before a resume: the attempts still ``running`` whose driver is gone become ``lost``
        (returns how many). ``StoreError`` when the sweep's driver still runs on this host:
        two drivers must not run one sweep."""
        row = self.conn.execute(
            "SELECT status, driver_pid, driver_host FROM sweeps WHERE sweep_id = ?", (sweep_id,)
        ).fetchone()
        pid, host = row["driver_pid"], row["driver_host"]
        if (
            row["status"] == "running"
            and pid
            and int(pid) != os.getpid()
            and host == socket.gethostname()
            and process_alive(int(pid))
        ):
            raise StoreError(
                f"sweep {sweep_id} is still running: its driver, pid {pid}, is alive; wait for "
                f"it, or stop it (Ctrl-C, or kill {pid}) before --resume"
            )
        where = f"pid {pid} on {host}" if pid else "unknown"
        cur = self.conn.execute(
            "UPDATE sweep_trials SET status = 'lost', error = ? WHERE sweep_id = ?"
            " AND status = 'running'",
            (f"its sweep driver ({where}) is gone; --resume runs the trial again", sweep_id),
        )
        return int(cur.rowcount)

    def resolve(self, sweep_id: str) -> str:
        """The full id of ``sweep_id`` or of the one sweep whose id starts with it."""
        pattern = sweep_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.conn.execute(
            "SELECT sweep_id FROM sweeps WHERE sweep_id = ? OR sweep_id LIKE ? ESCAPE '\\'"
            " ORDER BY sweep_id != ? LIMIT 6",
            (sweep_id, pattern, sweep_id),
        ).fetchall()
        if rows and (rows[0]["sweep_id"] == sweep_id or len(rows) == 1):
            return str(rows[0]["sweep_id"])
        if rows:
            raise UnknownSweepError(
                f"sweep id prefix {sweep_id!r} is ambiguous; give more characters"
            )
        raise UnknownSweepError(
            f"no sweep {sweep_id!r} in the store {self.runs.path}; see `mosaic sweeps list`"
        )

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT * FROM sweeps WHERE sweep_id = ?", (self.resolve(sweep_id),)
        ).fetchone()
        out = dict(row)
        out["spec"] = _json_object(out.pop("spec_json"), out["sweep_id"], "spec_json")
        try:  # every tool reads its metric, seeds or space: a spec that does not parse is damaged
            parse_spec(out["spec"])
        except SpecError as exc:
            raise DamagedSweepError(
                out["sweep_id"], "spec_json", f"is not a sweep spec ({clip(str(exc), 160)})"
            ) from None
        return out

    def list_sweeps(
        self, limit: int | None = 20, *, include_unfinished: bool = False
    ) -> list[dict[str, Any]]:
        """The newest sweeps first, with their trial counts and ``best``: the best metric of
        their completed trials (of every trial with ``include_unfinished``; a damaged
        metric, not a number, is left out of it: ``sweeps show`` names it)."""
        number = "typeof(t.metric) IN ('integer', 'real')"
        if not include_unfinished:
            number += f" AND t.status = '{BEST_FROM}'"
        metric = f"CASE WHEN {number} THEN t.metric END"
        sql = (
            "SELECT s.sweep_id, s.worker, s.engine, s.status, s.created_at, s.ended_at, s.metric,"
            " s.mode, count(t.trial_key) AS attempts, count(DISTINCT t.trial_key) AS trials,"
            " sum(t.status = 'completed') AS completed, sum(t.status = 'failed') AS failed,"
            f" CASE s.mode WHEN 'max' THEN max({metric}) ELSE min({metric}) END AS best"
            " FROM sweeps s LEFT JOIN sweep_trials t ON t.sweep_id = s.sweep_id"
            " GROUP BY s.sweep_id ORDER BY s.created_at DESC"
        )
        params: tuple[int, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        return [dict(r) for r in self.conn.execute(sql, params).fetchall()]

    def trials(self, sweep_id: str, *, include_unfinished: bool = False) -> list[dict[str, Any]]:
        """Every attempt of every trial, best first: the completed ones by metric, then the
        others (pruned, stopped, failed...: their value is of a run cut short) by metric, no
        metric last; ``include_unfinished``: all by metric. With the run's status and counts
        (``games`` and ``agent_episodes``: None but for a multi-agent run)."""
        sweep = self.get_sweep(sweep_id)
        order = "DESC" if sweep["mode"] == "max" else "ASC"
        first = "" if include_unfinished else f"t.status != '{BEST_FROM}', "
        rows = self.conn.execute(
            "SELECT t.trial_key, t.attempt, t.run_id, t.params_json, t.status, t.metric, t.node,"
            f" t.error, {self._parent} AS parent_run_id, r.status AS run_status, r.episodes,"
            " r.steps, r.started_at, r.ended_at"
            " FROM sweep_trials t LEFT JOIN runs r ON r.run_id = t.run_id"
            f" WHERE t.sweep_id = ? ORDER BY t.metric IS NULL, {first}t.metric {order},"
            " t.trial_key, t.attempt",
            (sweep["sweep_id"],),
        ).fetchall()
        out = []
        for row in rows:
            d = dict(row)
            sid, trial = sweep["sweep_id"], f"{d['trial_key']} (attempt {d['attempt']})"
            d["params"] = _json_object(d.pop("params_json"), sid, "params_json", trial)
            d["metric"] = _metric_value(d["metric"], sid, trial)
            d["games"] = d["agent_episodes"] = None
            if d["run_status"]:
                counts = self.runs.get_run(d["run_id"])["counts"]
                d["games"], d["agent_episodes"] = counts["games"], counts["agent_episodes"]
            out.append(d)
        return out

    def finished_keys(self, sweep_id: str) -> set[str]:
        """Trials whose last attempt finished (``--resume`` leaves them alone)."""
        rows = self.conn.execute(
            "SELECT trial_key, status FROM sweep_trials t WHERE sweep_id = ? AND attempt ="
            " (SELECT max(attempt) FROM sweep_trials u WHERE u.sweep_id = t.sweep_id"
            " AND u.trial_key = t.trial_key)",
            (sweep_id,),
        ).fetchall()
        return {r["trial_key"] for r in rows if r["status"] in FINISHED}

    def metric_of_run(self, run_id: str, metric: Metric) -> float | None:
        """The metric of a run (:mod:`mosaic_sdk.sweeps.objective`); None when it has none."""
        return metric_of_run(self.runs, run_id, metric)
