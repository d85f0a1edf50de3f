"""The SQLite store of runs: :class:`RunStore`, the queries behind ``mosaic runs``."""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, cast

from mosaic_sdk.runner.storage import summary
from mosaic_sdk.runner.storage.paths import default_store_path
from mosaic_sdk.runner.storage.records import (
    RECOVERED_EVENT,
    STALLED_EVENT,
    AgentSummary,
    EpisodePoint,
    EventRecord,
    JsonObject,
    LogLineRecord,
    ObserverRecord,
    RunRecord,
    SeriesColumns,
    SeriesCounts,
    SeriesInfo,
    SeriesPoints,
    columns_of,
)
from mosaic_sdk.runner.storage.rows import text
from mosaic_sdk.runner.storage.schema import (
    RAW_UNFINISHED_SQL,
    STATUSES,
    StoreError,
    UnknownRunError,
    connect,
    connect_readonly,
)
from mosaic_sdk.shm.processes import process_alive, process_start_ticks

#: The ``SELECT`` lists of the records read back (their keys, in order).
_EVENT_COLUMNS = ", ".join(columns_of(EventRecord))
_LOG_COLUMNS = ", ".join(columns_of(LogLineRecord))

#: One row of a series' points as numpy reads it (NULL, SQLite's NaN, read as the text 'nan').
_POINT_FIELDS = [("step", "<i8"), ("value", "<f8"), ("wall_ns", "<i8")]
#: Per step range [lo, hi) of ``?3`` (a JSON list of edges) of one series (``?1`` run, ``?2``
#: series id), as text: its number of points, of finite points, and the key (step, wall_ns,
#: line_no) of its lowest and highest point (SQLite takes a bare column from the row of the
#: one min() or max(); NULL, its NaN, is neither). Values are read by key after
#: (:data:`_VALUES_BY_KEY`): SQLite's printf of a float does not round-trip.
_EXTREMES = (
    "WITH e(lo, hi) AS (SELECT value, lead(value) OVER (ORDER BY key) FROM json_each(?3))"
    " SELECT"
    " (SELECT printf('%d %d %d %d %d', count(*), count(value), step, wall_ns, line_no)"
    " || ifnull(substr(min(value), 1, 0), '')"
    " FROM series_points WHERE run_id = ?1 AND series_id = ?2 AND step >= e.lo AND step < e.hi),"
    " (SELECT printf('%d %d %d', step, wall_ns, line_no) || substr(max(value), 1, 0)"
    " FROM series_points WHERE run_id = ?1 AND series_id = ?2 AND step >= e.lo AND step < e.hi)"
    " FROM e WHERE e.hi IS NOT NULL"
)
#: A range of up to this many points per bucket is read whole and downsampled in numpy (a
#: query per bucket costs more than reading a few points each).
_READ_WHOLE = 16


def _extremes_of(columns: SeriesColumns, lo: int, hi: int, buckets: int) -> SeriesColumns:
    """The downsampled read of :meth:`RunStore.series_columns` on columns read whole (the
    ranges and points of :data:`_EXTREMES`, but for ties)."""
    import numpy as np  # only here: `mosaic` commands start without numpy

    edges = np.unique(np.linspace(lo, hi + 1, buckets + 1).astype(np.int64))
    finite = np.flatnonzero(np.isfinite(columns.values))
    bucket = np.searchsorted(edges, columns.steps[finite], side="right") - 1
    order = finite[np.lexsort((columns.values[finite], bucket))]
    by_bucket = bucket[np.argsort(bucket, kind="stable")]
    starts = np.flatnonzero(np.r_[True, by_bucket[1:] != by_bucket[:-1]]) if len(order) else order
    ends = np.r_[starts[1:], len(order)] - 1 if len(order) else order
    keep = np.unique(np.concatenate([order[starts], order[ends]])) if len(order) else order
    picked = (columns.steps[keep], columns.values[keep], columns.wall_ns[keep])
    counts = (columns.points, columns.not_finite)
    return SeriesColumns(columns.name, columns.agent_id, *picked, *counts, downsampled=True)


#: A point's value as read (``p``: its row): NULL, SQLite's NaN, as the text 'nan'.
_VALUE = "ifnull(p.value, 'nan')"
#: The same in a store that notes the points whose value is -0.0 (version 8): a REAL column
#: gives 0.0 back for them (only a zero is looked up, by its key).
_SIGNED_VALUE = (
    "CASE WHEN p.value = 0 AND EXISTS (SELECT 1 FROM series_negative_zeros AS z"
    " WHERE z.run_id = p.run_id AND z.series_id = p.series_id AND z.step = p.step"
    " AND z.wall_ns = p.wall_ns AND z.line_no = p.line_no) THEN -0.0"
    f" ELSE {_VALUE} END"
)
#: The points of one series (run, series id) with a step in [lo, hi], in order.
_POINTS_IN = (
    "SELECT p.step, {value}, p.wall_ns FROM series_points AS p"
    " WHERE p.run_id = ? AND p.series_id = ? AND p.step >= ? AND p.step <= ?"
    " ORDER BY p.step, p.wall_ns, p.line_no"
)
#: The points of ``?3`` (a JSON list of [step, wall_ns, line_no] keys) of one series, each
#: found by its primary key (CROSS JOIN: the keys are the outer loop).
_VALUES_BY_KEY = (
    "SELECT p.step, {value}, p.wall_ns FROM json_each(?3) AS k"
    " CROSS JOIN series_points AS p ON p.run_id = ?1 AND p.series_id = ?2"
    " AND p.step = json_extract(k.value, '$[0]') AND p.wall_ns = json_extract(k.value, '$[1]')"
    " AND p.line_no = json_extract(k.value, '$[2]')"
    " ORDER BY p.step, p.wall_ns, p.line_no"
)
#: A series' last value (``s``: its ``series`` row), with its sign where it is -0.0.
_LAST_VALUE = "s.last_value"
_SIGNED_LAST_VALUE = (
    "CASE WHEN s.last_value = 0 AND EXISTS (SELECT 1 FROM series_negative_zeros AS z"
    " WHERE z.run_id = s.run_id AND z.series_id = s.series_id AND z.step = s.last_step"
    " AND z.wall_ns = s.last_wall_ns) THEN -0.0 ELSE s.last_value END"
)


def _row_dict(cursor: sqlite3.Cursor, row: Sequence[object]) -> dict[str, Any]:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


#: Above this many agents, a run's env steps per agent are counted in grouped passes over
#: its rows instead of index lookups per agent.
AGENT_LOOKUPS = 256
#: The env steps of a set of episode lines: the sum of their positive integer ``steps``.
_EPISODE_STEPS = (
    "coalesce(sum(CASE WHEN typeof(steps) = 'integer' AND steps > 0 THEN steps END), 0)"
)
#: The ``runs`` columns gathered in a run's ``counts``, in order.
_COUNTED = (
    "steps",
    "episodes",
    "unfinished_episodes",
    "events",
    "log_lines",
    "invalid_lines",
    "stderr_lines",
    "lines",
    "series_points",
    "series_refused",
)


class RunStore:
    """A connection to one store file: run rows created and finished, and every read (the
    rows of a running run are written by :class:`~mosaic_sdk.runner.storage.writer.StoreWriter`)."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.conn = connect_readonly(self.path) if readonly else connect(self.path)
        self.conn.row_factory = _row_dict
        self._blocks: bool | None = None
        self._signs: bool | None = None
        self._unfinished: str | None = None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing run rows -------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        worker: str,
        *,
        run_dir: Path | None = None,
        config: Mapping[str, object] | None = None,
        argv: Sequence[str] | None = None,
        stderr_path: Path | None = None,
        control_protocol: int | None = None,
    ) -> None:
        """Add a run with status ``running``; refuses an id the store already holds (one
        ``INSERT``: of two runners that pick one id, exactly one gets it)."""
        try:
            self.conn.execute(
                "INSERT INTO runs (run_id, worker, status, started_at, runner_pid, runner_host,"
                " runner_start_ticks, run_dir, stderr_path, config_json, argv_json,"
                " control_protocol) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    worker,
                    time.time(),
                    os.getpid(),
                    socket.gethostname(),
                    process_start_ticks(os.getpid()) or None,
                    None if run_dir is None else str(run_dir),
                    None if stderr_path is None else str(stderr_path),
                    None if config is None else json.dumps(config, sort_keys=True),
                    None if argv is None else json.dumps(list(argv)),
                    control_protocol,
                ),
            )
        except sqlite3.IntegrityError:
            raise StoreError(
                f"run id {run_id!r} is already in the store {self.path}; pick another --run-id "
                "(or leave it out to get a new one)"
            ) from None

    def set_launch(
        self, run_id: str, config: Mapping[str, object], argv: Sequence[str], stderr_path: Path
    ) -> None:
        """Record how the run is launched (known once its id is claimed)."""
        self.conn.execute(
            "UPDATE runs SET config_json = ?, argv_json = ?, stderr_path = ? WHERE run_id = ?",
            (json.dumps(config, sort_keys=True), json.dumps(list(argv)), str(stderr_path), run_id),
        )

    def mark_started(self, run_id: str) -> None:
        self.conn.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", (time.time(), run_id))

    def delete_run(self, run_id: str) -> None:
        """Remove a run that never started (its launch could not be prepared)."""
        tables = (
            "events steps episodes log_lines series series_points series_blocks"
            " series_negative_zeros runs"
        )
        for table in tables.split():
            self.conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

    def record_observers(self, run_id: str, reports: Sequence[ObserverRecord]) -> None:
        """Record what each observer plugin of the run was given and missed (a JSON list)."""
        self.conn.execute(
            "UPDATE runs SET observers_json = ? WHERE run_id = ?",
            (json.dumps(list(reports), sort_keys=True) if reports else None, run_id),
        )

    def set_worker_pid(self, run_id: str, pid: int) -> None:
        self.conn.execute("UPDATE runs SET worker_pid = ? WHERE run_id = ?", (pid, run_id))

    def finish_run(
        self,
        run_id: str,
        status: str,
        exit_code: int | None,
        error: str | None = None,
        lost_rows: int = 0,
    ) -> None:
        """Record the final status of a run (and how many of its rows could not be stored)."""
        if status not in STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        self.conn.execute(
            "UPDATE runs SET status = ?, exit_code = ?, error = ?, ended_at = ?, lost_rows = ?"
            " WHERE run_id = ?",
            (status, exit_code, error, time.time(), lost_rows, run_id),
        )

    # -- reading ----------------------------------------------------------------------------
    def resolve(self, run_id: str) -> str:
        """The full id of ``run_id`` or of the one run whose id starts with it (bound as
        :func:`~.rows.text`: a lone surrogate from argv is looked up, never raises)."""
        run_id = text(run_id)
        row = self.conn.execute("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row:
            return str(row["run_id"])
        pattern = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.conn.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 6", (pattern,)
        ).fetchall()
        if len(rows) == 1:
            return str(rows[0]["run_id"])
        if len(rows) > 1:
            shown = ", ".join(r["run_id"] for r in rows[:5])
            raise UnknownRunError(
                f"run id prefix {run_id!r} is ambiguous ({shown}...); give more characters"
            )
        raise UnknownRunError(
            f"no run {run_id!r} in the store {self.path}; see `mosaic runs list"
            f"{'' if self._is_default() else ' --store ' + str(self.path)}`"
        )

    def _is_default(self) -> bool:
        try:
            return self.path.resolve() == default_store_path().resolve()
        except OSError:
            return False

    def get_run(self, run_id: str) -> RunRecord:
        """The run's row as a :class:`~mosaic_sdk.runner.storage.records.RunRecord`."""
        full = self.resolve(run_id)
        row = self.conn.execute("SELECT * FROM runs WHERE run_id = ?", (full,)).fetchone()
        return cast(RunRecord, self._summarise(row))

    def started_at(self, run_id: str) -> tuple[str, float]:
        """The run's full id and start time, without the counts :meth:`get_run` works out."""
        full = self.resolve(run_id)
        row = self.conn.execute("SELECT started_at FROM runs WHERE run_id = ?", (full,)).fetchone()
        return full, float(row["started_at"])

    def list_runs(self, limit: int | None = 20, worker: str | None = None) -> list[RunRecord]:
        """The newest runs first."""
        where, params = (" WHERE worker = ?", [text(worker)]) if worker else ("", [])
        rows = self.conn.execute(  # LIMIT -1: no limit
            f"SELECT * FROM runs{where} ORDER BY started_at DESC, run_id DESC LIMIT ?",
            [*params, -1 if limit is None else limit],
        ).fetchall()
        return [cast(RunRecord, self._summarise(r)) for r in rows]

    def run_ids(self) -> Iterator[str]:
        """Every run id in the store, read lazily (no run is summarised: a store of many
        thousands of runs costs one string each)."""
        cursor = summary.plain_cursor(self.conn)
        return (run_id for (run_id,) in cursor.execute("SELECT run_id FROM runs ORDER BY run_id"))

    def _summarise(self, row: dict[str, Any]) -> dict[str, Any]:
        out = dict(row)
        # series_*: absent from an older store opened read-only
        out["counts"] = {key: out.pop(key, 0) for key in _COUNTED}
        if "unfinished_episodes" not in row:  # an older store, read-only: from the lines
            self._count_unfinished(out)
        out["counts"].update(self._env_counts(row["run_id"], int(row["steps"])))
        out["config"] = json.loads(row["config_json"]) if row["config_json"] else None
        out["argv"] = json.loads(row["argv_json"]) if row["argv_json"] else None
        del out["config_json"], out["argv_json"]
        out.setdefault("lost_rows", 0)  # a version-1 store opened read-only
        out.setdefault("control_protocol", None)  # an older store opened read-only
        observers = out.pop("observers_json", None)  # absent from an older store
        out["observers"] = json.loads(observers) if observers else []
        ticks = out.pop("runner_start_ticks", None)
        out["runner_alive"] = None  # unknown: not running, or on another host
        if row["status"] == "running" and row["runner_pid"]:
            if row["runner_host"] == socket.gethostname():
                out["runner_alive"] = process_alive(int(row["runner_pid"]), int(ticks or 0))
        out["stalled"] = self._stalled(row["run_id"]) if row["status"] == "running" else None
        end = row["ended_at"] if row["ended_at"] is not None else time.time()
        out["duration_seconds"] = round(max(0.0, end - row["started_at"]), 3)
        return out

    def _has_column(self, table: str, column: str) -> bool:
        return any(r["name"] == column for r in self.conn.execute(f"PRAGMA table_info({table})"))

    def _unfinished_sql(self) -> str:
        """The SQL of an episode row's ``unfinished`` flag: its column, or on a store older
        than it (opened read-only) the flag read from the line."""
        if self._unfinished is None:
            has = self._has_column("episodes", "unfinished")
            self._unfinished = "unfinished" if has else f"{RAW_UNFINISHED_SQL}(raw)"
        return self._unfinished

    def _count_unfinished(self, out: dict[str, Any]) -> None:
        """A run of a store older than ``runs.unfinished_episodes`` (read-only): its counts
        and last return by the rule of unfinished episodes, from its lines."""
        flag = self._unfinished_sql()
        counts = out["counts"]
        row = self.conn.execute(
            f"SELECT count(*) AS n FROM episodes WHERE run_id = ? AND raw LIKE '%unfinished%'"
            f" AND {flag} = 1",
            (out["run_id"],),
        ).fetchone()
        counts["unfinished_episodes"] = int(row["n"])
        if row["n"]:
            counts["episodes"] = max(0, counts["episodes"] - int(row["n"]))
            last = self.conn.execute(
                "SELECT total_reward AS r FROM episodes WHERE run_id = ? AND"
                f" {flag} = 0 AND typeof(total_reward) IN ('integer', 'real')"
                " AND abs(total_reward) <= 1.7976931348623157e308"
                " ORDER BY line_no DESC LIMIT 1",
                (out["run_id"],),
            ).fetchone()
            out["last_episode_return"] = None if last is None else last["r"]

    def _env_counts(self, run_id: str, step_lines: int) -> dict[str, int | None]:
        """``step_lines``, ``env_steps``, and for a multi-agent run ``games`` and
        ``agent_episodes`` (None otherwise): see :class:`~.records.RunCounts`. Step lines
        are counted by index, never scanned."""
        per_agent = self._agent_env_steps(run_id)
        games: int | None = None
        agent_episodes: int | None = None
        if per_agent is None:  # single-agent
            env = self._env_steps(run_id, None, agentless=True)
        else:
            row = self.conn.execute(
                "SELECT count(DISTINCT episode_index) AS g, count(*) AS n FROM episodes"
                f" WHERE run_id = ? AND agent_id IS NOT NULL AND {self._unfinished_sql()} = 0",
                (run_id,),
            ).fetchone()
            env, games, agent_episodes = sum(per_agent.values()), int(row["g"]), int(row["n"])
        return {
            "step_lines": step_lines,
            "env_steps": max(step_lines, env),
            "games": games,
            "agent_episodes": agent_episodes,
        }

    def _env_steps(self, run_id: str, agent: str | None, *, agentless: bool = False) -> int:
        """Env steps of one agent (``agentless``: of the whole run): the sum of the integer
        ``steps`` of its episode lines plus its step lines after the last one; without step
        counts, its step lines (0 for ``agentless``: the caller takes the run's)."""
        where = "" if agentless else " AND agent_id = ?"
        params: list[object] = [run_id] if agentless else [run_id, agent]
        row = self.conn.execute(
            f"SELECT {_EPISODE_STEPS} AS s, coalesce(max(line_no), 0) AS last"
            f" FROM episodes WHERE run_id = ?{where}",
            params,
        ).fetchone()
        if row["s"] > 0:
            after = self.conn.execute(
                f"SELECT count(*) AS n FROM steps WHERE run_id = ? AND line_no > ?{where}",
                [run_id, row["last"], *params[1:]],
            ).fetchone()
            return int(row["s"]) + int(after["n"])
        if agentless:
            return 0
        lines = self.conn.execute(
            "SELECT count(*) AS n FROM steps WHERE run_id = ? AND agent_id = ?", params
        ).fetchone()
        return int(lines["n"])

    def _agent_ids(self, run_id: str, table: str) -> list[str]:
        """The distinct ``agent_id`` values of a run's rows of ``table``, found by jumps
        through the partial index (one lookup per agent, not a scan of the rows)."""
        return [
            r["id"]
            for r in self.conn.execute(
                "WITH RECURSIVE a(id) AS ("
                f" SELECT (SELECT min(agent_id) FROM {table} WHERE run_id = ?1"
                "  AND agent_id IS NOT NULL)"
                f" UNION ALL SELECT (SELECT min(agent_id) FROM {table} WHERE run_id = ?1"
                "  AND agent_id > a.id) FROM a WHERE a.id IS NOT NULL"
                ") SELECT id FROM a WHERE id IS NOT NULL",
                (run_id,),
            )
        ]

    def _agent_env_steps(self, run_id: str) -> dict[str | None, int] | None:
        """Env steps per ``agent_id`` (see :meth:`_env_steps`); None for a run without agent
        ids. Past :data:`AGENT_LOOKUPS` agents, two grouped passes over the run's rows
        instead of lookups per agent (the cost never grows with agents times rows)."""
        if not self._has_column("episodes", "agent_id"):
            return None
        agents = dict.fromkeys(self._agent_ids(run_id, "episodes"))
        agents.update(dict.fromkeys(self._agent_ids(run_id, "steps")))
        if not agents:
            return None
        if len(agents) <= AGENT_LOOKUPS:
            return {agent: self._env_steps(run_id, agent) for agent in agents}
        out: dict[str | None, int] = dict.fromkeys(agents, 0)
        last: dict[str | None, int] = {}
        for r in self.conn.execute(
            f"SELECT agent_id AS a, {_EPISODE_STEPS} AS s, max(line_no) AS last FROM episodes"
            " WHERE run_id = ? AND agent_id IS NOT NULL GROUP BY agent_id",
            (run_id,),
        ):
            if r["s"] > 0:
                out[r["a"]] = int(r["s"])
                last[r["a"]] = int(r["last"])
        for r in self.conn.execute(
            "SELECT agent_id AS a, line_no AS n FROM steps"
            " WHERE run_id = ? AND agent_id IS NOT NULL",
            (run_id,),
        ):
            if r["n"] > last.get(r["a"], -1):
                out[r["a"]] += 1
        return out

    def _stalled(self, run_id: str) -> JsonObject | None:
        """The payload of the run's ``stalled`` event, with its ``ts_unix_ns``, when no
        ``recovered`` came after it (:mod:`mosaic_sdk.runner.recording.health`); else None."""
        row = self.conn.execute(
            "SELECT event, ts_unix_ns, payload_json FROM events WHERE run_id = ?"
            " AND synthesised = 1 AND event IN (?, ?) ORDER BY line_no DESC LIMIT 1",
            (run_id, STALLED_EVENT, RECOVERED_EVENT),
        ).fetchone()
        if row is None or row["event"] != STALLED_EVENT:
            return None
        try:
            payload = json.loads(row["payload_json"] or "{}")
        except ValueError:
            payload = {}
        out: JsonObject = dict(payload) if isinstance(payload, dict) else {}
        out["ts_unix_ns"] = row["ts_unix_ns"]
        return out

    def events(self, run_id: str, limit: int | None = None) -> list[EventRecord]:
        """Lifecycle events of a run in order (the last ``limit`` when given)."""
        return self._tail(f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ?", run_id, limit)

    def log_lines(
        self, run_id: str, limit: int | None = None, stream: str | None = None
    ) -> list[LogLineRecord]:
        """Log lines of a run (stdout then stderr numbering; the last ``limit``)."""
        sql = f"SELECT {_LOG_COLUMNS} FROM log_lines WHERE run_id = ?"
        if stream is not None:
            sql += f" AND stream = '{'stderr' if stream == 'stderr' else 'stdout'}'"
        return self._tail(sql, run_id, limit)

    def count_log_lines(self, run_id: str, kind: str) -> int:
        """How many of a run's log lines are of ``kind`` (e.g. ``control_reply``)."""
        row = self.conn.execute(
            "SELECT count(*) AS n FROM log_lines WHERE run_id = ? AND kind = ?", (run_id, kind)
        ).fetchone()
        return int(row["n"])

    def events_after(self, run_id: str, after: int, limit: int) -> list[EventRecord]:
        """Up to ``limit`` events with ``line_no > after``, in order (a live view's cursor)."""
        return self.conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events"
            " WHERE run_id = ? AND line_no > ? ORDER BY line_no LIMIT ?",
            (run_id, after, limit),
        ).fetchall()

    def events_named(
        self, run_id: str, event: str, after: int = 0, limit: int = 10_000
    ) -> list[EventRecord]:
        """Up to ``limit`` events called ``event`` with ``line_no > after``, in order."""
        return self.conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events"
            " WHERE run_id = ? AND event = ? AND line_no > ? ORDER BY line_no LIMIT ?",
            (run_id, event, after, limit),
        ).fetchall()

    def log_lines_after(
        self, run_id: str, stream: str, after: int, limit: int
    ) -> list[LogLineRecord]:
        """Up to ``limit`` log lines of ``stream`` with ``line_no > after``, in order."""
        return self.conn.execute(
            f"SELECT {_LOG_COLUMNS} FROM log_lines"
            " WHERE run_id = ? AND stream = ? AND line_no > ? ORDER BY line_no LIMIT ?",
            (run_id, stream, after, limit),
        ).fetchall()

    def _tail(self, sql: str, run_id: str, limit: int | None) -> list[Any]:
        """The rows of ``sql`` in line order, the last ``limit`` when given."""
        if limit is None:
            return self.conn.execute(sql + " ORDER BY line_no", (run_id,)).fetchall()
        rows = self.conn.execute(sql + " ORDER BY line_no DESC LIMIT ?", (run_id, limit))
        return list(reversed(rows.fetchall()))

    def count_rows(self, run_id: str) -> dict[str, int]:
        """Counts by ``COUNT(*)`` over the tables (slower than ``counts``; for checking)."""
        sql = "SELECT count(*) AS n FROM {} WHERE run_id = ?"
        return {
            table: int(self.conn.execute(sql.format(table), (run_id,)).fetchone()["n"])
            for table in ("steps", "episodes", "events", "log_lines")
        }

    def agents(self, run_id: str) -> list[AgentSummary]:
        """Steps, episodes and returns (mean, min, max, last: None without a numeric one) per
        ``agent_id`` of a run, when it has more than one agent (rows without an id form the
        group ``None``); ``[]`` otherwise, and on a store older than the ``agent_id`` column."""
        if not self._has_column("steps", "agent_id"):
            return []
        with self.snapshot():  # a live run's counter and rows agree
            return self._agents(run_id)

    def _agents(self, run_id: str) -> list[AgentSummary]:
        conn = self.conn
        groups: dict[str | None, AgentSummary] = {}

        def group(agent: str | None) -> AgentSummary:
            returns = dict.fromkeys(("mean_return", "min_return", "max_return", "last_return"))
            new = {"agent_id": agent, "steps": 0, "env_steps": 0, "episodes": 0, **returns}
            return groups.setdefault(agent, cast(AgentSummary, new))

        # the returns that are numbers (a worker may write anything into total_reward)
        number = "CASE WHEN typeof(total_reward) IN ('integer', 'real') THEN total_reward END"
        returns = f"avg(total_reward) AS mean, min({number}) AS lo, max({number}) AS hi"
        # SQLite takes a bare column from the row of max(line_no): the agent's last episode
        last = f"{number} AS last, max(line_no)"

        def fill(g: AgentSummary, r: dict[str, Any]) -> None:
            g["episodes"], g["mean_return"] = r["n"], r["mean"]
            g["min_return"], g["max_return"], g["last_return"] = r["lo"], r["hi"], r["last"]

        # the partial indexes hold exactly the rows with an agent id: counting them is cheap
        for r in conn.execute(
            "SELECT agent_id, count(*) AS n FROM steps WHERE run_id = ? AND agent_id IS NOT NULL"
            " GROUP BY agent_id",
            (run_id,),
        ).fetchall():
            group(r["agent_id"])["steps"] = r["n"]
        # finished episodes only (docs/reference/telemetry.md, "Unfinished episodes")
        finished = f"{self._unfinished_sql()} = 0"
        for r in conn.execute(
            f"SELECT agent_id, count(*) AS n, {returns}, {last} FROM episodes"
            f" WHERE run_id = ? AND agent_id IS NOT NULL AND {finished} GROUP BY agent_id",
            (run_id,),
        ).fetchall():
            fill(group(r["agent_id"]), r)
        if not groups:
            return []
        total = conn.execute("SELECT steps FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        no_id_steps = (total["steps"] if total else 0) - sum(g["steps"] for g in groups.values())
        no_id = conn.execute(
            f"SELECT count(*) AS n, {returns}, {last} FROM episodes"
            f" WHERE run_id = ? AND agent_id IS NULL AND {finished}",
            (run_id,),
        ).fetchone()
        if no_id_steps > 0 or no_id["n"]:
            g = group(None)
            g["steps"] = no_id_steps
            fill(g, no_id)
        if len(groups) < 2:
            return []
        env = self._agent_env_steps(run_id) or {}
        for agent, g in groups.items():
            g["env_steps"] = env.get(agent, g["steps"]) if agent is not None else g["steps"]
        return sorted(groups.values(), key=lambda g: (g["agent_id"] is None, str(g["agent_id"])))

    def has_agent(self, run_id: str, agent: str) -> bool:
        """Whether a step or episode row of the run carries ``agent_id`` ``agent`` (one
        lookup in each partial index); False on a store older than the column."""
        return any(
            self._has_column(table, "agent_id")
            and self.conn.execute(
                f"SELECT 1 FROM {table} WHERE run_id = ? AND agent_id = ? LIMIT 1",
                (run_id, text(agent)),
            ).fetchone()
            for table in ("steps", "episodes")
        )

    def agent_ids(self, run_id: str) -> list[str]:
        """The distinct ``agent_id`` values of the run's step and episode rows, sorted;
        ``[]`` for a single-agent run and on a store older than the column."""
        found = {
            agent
            for table in ("steps", "episodes")
            if self._has_column(table, "agent_id")
            for agent in self._agent_ids(run_id, table)
        }
        return sorted(found, key=str)

    def custom_events(self, run_id: str, standard: Sequence[str]) -> Iterator[EventRecord]:
        """The events the worker wrote whose name is not in ``standard``, in order (read as
        they are iterated: a long run is not read into memory at once)."""
        marks = ",".join("?" * len(standard))
        return self.conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND synthesised = 0"
            f" AND event NOT IN ({marks}) ORDER BY line_no",
            (run_id, *standard),
        )

    def episode_rows(
        self,
        run_id: str,
        started_at: float,
        after: int = 0,
        agent: str | None = None,
        *,
        agentless: bool = False,
        include_unfinished: bool = False,
    ) -> list[EpisodePoint]:
        """``(line_no, return, kind, steps, seconds since started_at)`` of each episode of
        ``run_id`` (a full id) with ``line_no > after``, in line order (a learning curve).
        ``kind``: 0 a number (``return``; maybe infinite), 1 NULL, 2 something else (``return``
        0 then), 3 an unfinished episode (cut off by the run's end: no return of the run;
        its steps were taken), read as a finished one with ``include_unfinished``. A missing
        step count is -1, a missing timestamp -inf. ``agent``: only that ``agent_id``'s
        episodes; ``agentless``: only those without one."""
        where, params = "", []
        if agent is not None or agentless:
            if not self._has_column("episodes", "agent_id"):
                where = "" if agentless else " AND 0"
            elif agentless:
                where = " AND agent_id IS NULL"
            else:
                where, params = " AND agent_id = ?", [text(agent)]
        cursor = summary.plain_cursor(self.conn)
        cut = "" if include_unfinished else f" WHEN {self._unfinished_sql()} = 1 THEN 3"
        return cursor.execute(
            "SELECT line_no,"
            " CASE WHEN typeof(total_reward) IN ('integer', 'real') THEN total_reward ELSE 0 END,"
            f" CASE{cut} WHEN typeof(total_reward) IN ('integer', 'real') THEN 0"
            " WHEN typeof(total_reward) = 'null' THEN 1 ELSE 2 END,"
            " CASE WHEN typeof(steps) IN ('integer', 'real') THEN steps ELSE -1 END,"
            " CASE WHEN typeof(ts_unix_ns) IN ('integer', 'real') THEN (ts_unix_ns - ?) / 1e9"
            " ELSE -1e999 END"
            f" FROM episodes WHERE run_id = ? AND line_no > ?{where} ORDER BY line_no",
            (int(round(float(started_at) * 1e9)), run_id, int(after), *params),
        ).fetchall()

    def row_cursor(
        self,
        run_id: str,
        table: str,
        columns: Sequence[str],
        agent: str | None = None,
        *,
        include_unfinished: bool = True,
    ) -> sqlite3.Cursor:
        """A cursor of tuples of ``columns`` of ``table`` (``steps``, ``episodes``, ``events``)
        for one run (a full id), in line order, read as fetched. ``agent``: only the rows of
        that ``agent_id``. A store older than the column gives NULL for it (no rows for
        an ``agent``); ``unfinished`` of such a store is read from each line.
        ``include_unfinished`` False: no episode row flagged unfinished."""
        if table not in ("steps", "episodes", "events"):
            raise ValueError(f"no table {table!r} to read rows from")
        known = {row["name"] for row in self.conn.execute(f"PRAGMA table_info({table})")}
        has_agent = "agent_id" in known
        if table != "events":
            known.add("agent_id")  # NULL where the store predates it
        if table == "episodes":
            known.add("unfinished")  # read from the line where the store predates it
        unknown = [c for c in columns if c not in known]
        if unknown or not columns:
            raise ValueError(f"{table} has no column(s) {unknown}")
        if agent is not None and table == "events":
            raise ValueError("events have no agent_id: filter steps or episodes by agent")
        flag = self._unfinished_sql() if table == "episodes" else "0"
        select = ", ".join(
            "NULL AS agent_id"
            if c == "agent_id" and not has_agent
            else f"{flag} AS unfinished"
            if c == "unfinished"
            else c
            for c in columns
        )
        where, params = "run_id = ?", [run_id]
        if table == "episodes" and not include_unfinished:
            where += f" AND {flag} = 0"
        if agent is not None:
            where += " AND agent_id = ?" if has_agent else " AND 0"
            params += [text(agent)] if has_agent else []
        cursor = summary.plain_cursor(self.conn)
        return cursor.execute(
            f"SELECT {select} FROM {table} WHERE {where} ORDER BY line_no", params
        )

    # -- series (what becomes one: mosaic_sdk.runner.recording.series) ---------------------
    def _has_table(self, name: str) -> bool:
        """Whether the store has table ``name`` (an older store opened read-only may not)."""
        row = self.conn.execute(
            "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return bool(row["n"])

    def series(self, run_id: str, pattern: str | None = None) -> list[SeriesInfo]:
        """The series of a run (an id or a unique prefix), by name then agent.
        ``pattern``: only the names it matches, an :mod:`fnmatch` glob (``losses/*``; case
        counts)."""
        full = self.resolve(run_id)
        if not self._has_table("series"):
            return []
        cursor = summary.plain_cursor(self.conn)
        last_value = _SIGNED_LAST_VALUE if self._has_signs() else _LAST_VALUE
        rows = cursor.execute(
            f"SELECT s.name, s.agent_id, s.points, s.first_step, s.last_step, {last_value},"
            " s.last_wall_ns FROM series AS s WHERE s.run_id = ? AND s.points > 0"
            " ORDER BY s.name, s.agent_id IS NOT NULL, s.agent_id",
            (full,),
        ).fetchall()
        return [
            SeriesInfo(name, agent, points, first, last, math.nan if value is None else value, wall)
            for name, agent, points, first, last, value, wall in rows
            if pattern is None or fnmatchcase(name, pattern)
        ]

    def series_points(
        self,
        run_id: str,
        name: str,
        agent_id: str | None = None,
        *,
        after_step: int | None = None,
        limit: int | None = None,
    ) -> SeriesPoints:
        """The points of one series of a run (``agent_id`` None: the series without one), by
        step, then wall time, as lists (:meth:`series_columns` gives numpy columns);
        ``after_step``: only those with a larger step; ``limit``: the first ``limit`` of them.
        A series the run does not have has no points."""
        got = self.series_columns(run_id, name, agent_id, after_step=after_step, limit=limit)
        return SeriesPoints(
            name, agent_id, got.steps.tolist(), got.values.tolist(), got.wall_ns.tolist()
        )

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction around several reads (``with store.snapshot(): ...``): they
        see one state of a store being written (none is begun inside one)."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _series_row(
        self, full: str, name: str, agent_id: str | None
    ) -> tuple[sqlite3.Cursor, tuple[Any, ...] | None]:
        """A tuple cursor, and the series' (series_id, first_step, last_step, points,
        summarised) row (None when the run has no point of it)."""
        cursor = summary.plain_cursor(self.conn)
        if not self._has_table("series"):
            return cursor, None
        found = cursor.execute(
            "SELECT series_id, first_step, last_step, points,"
            f" {'summarised' if self._has_blocks() else 0} FROM series"
            " WHERE run_id = ? AND name = ? AND agent_id IS ?",
            (full, text(name), None if agent_id is None else text(agent_id)),
        ).fetchone()
        return cursor, None if found is None or found[1] is None else found

    def series_columns(
        self,
        run_id: str,
        name: str,
        agent_id: str | None = None,
        *,
        after_step: int | None = None,
        through_step: int | None = None,
        limit: int | None = None,
        buckets: int | None = None,
    ) -> SeriesColumns:
        """The points of one series of a run as numpy columns (:class:`SeriesColumns`), by
        step, then wall time. ``after_step`` / ``through_step``: only the points with a
        step past / up to them; ``limit``: the first ``limit`` of them.

        ``buckets`` (a picture's width in pixels): a range of more than twice that many
        points gives each of ``buckets`` equal step ranges' lowest and highest finite point
        (``downsampled`` True; ``points`` and ``not_finite`` count the whole range), from
        the block summaries (:mod:`~mosaic_sdk.runner.storage.summary`: a cost that grows
        with ``buckets``) or, without them, by scanning inside SQLite. Never for data that
        leaves the SDK whole (an export): those read every point."""
        import numpy as np  # only here: `mosaic` commands start without numpy

        if buckets is not None and (limit is not None or buckets < 1):
            raise ValueError(
                f"buckets={buckets}: give a positive number of buckets, without a limit"
            )
        full = self.resolve(run_id)
        empty = np.zeros(0, dtype=np.int64)
        out = SeriesColumns(name, agent_id, empty, np.zeros(0), empty.copy(), 0, 0)
        cursor, found = self._series_row(full, name, agent_id)
        if found is None:
            return out
        series_id, first, last, stored, summarised = found
        lo = first if after_step is None else max(first, int(after_step) + 1)
        hi = last if through_step is None else min(last, int(through_step))
        if hi < lo:
            return out
        if buckets is not None and summarised and stored > _READ_WHOLE * buckets:
            top = summary.top_level(int(stored * (hi - lo + 1) / max(1, last - first + 1)), buckets)
            with self.snapshot():  # read from the block summaries
                part = summary.cover(cursor, full, series_id, (lo, hi), buckets, top)
            if part.points > 2 * buckets:
                kept = summary.extremes(part, lo, buckets, (hi + 1 - lo) / buckets)
                thinned = (*kept, part.points, part.not_finite)
                return SeriesColumns(name, agent_id, *thinned, downsampled=True)
            buckets = None  # the range holds at most 2 * buckets points: every one
        in_range = stored
        if buckets is not None and stored > 2 * buckets and (lo, hi) != (first, last):
            in_range = cursor.execute(
                "SELECT count(*) FROM series_points"
                " WHERE run_id = ? AND series_id = ? AND step >= ? AND step <= ?",
                (full, series_id, lo, hi),
            ).fetchone()[0]
        if buckets is not None and in_range > _READ_WHOLE * buckets:
            thin = self._series_extremes(cursor, full, series_id, name, agent_id, lo, hi, buckets)
            if thin is not None:
                return thin
        sql = self._points_sql(_POINTS_IN)
        params: list[object] = [full, series_id, lo, hi]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        columns = self._columns(name, agent_id, cursor.execute(sql, params).fetchall())
        if buckets is not None and len(columns) > 2 * buckets:
            return _extremes_of(columns, lo, hi, buckets)
        return columns

    def _has_blocks(self) -> bool:
        """Whether the store keeps the series' block summaries (version 7)."""
        if self._blocks is None:
            self._blocks = self._has_table("series_blocks")
        return self._blocks

    def _has_signs(self) -> bool:
        """Whether the store notes the points whose value is -0.0 (version 8)."""
        if self._signs is None:
            self._signs = self._has_table("series_negative_zeros")
        return self._signs

    def _points_sql(self, sql: str) -> str:
        """``sql`` (:data:`_POINTS_IN`, :data:`_VALUES_BY_KEY`) reading each value with its sign
        where the store notes it."""
        return sql.format(value=_SIGNED_VALUE if self._has_signs() else _VALUE)

    @staticmethod
    def _columns(
        name: str, agent_id: str | None, rows: list[Any], points: int | None = None
    ) -> SeriesColumns:
        import numpy as np  # only here: `mosaic` commands start without numpy

        table = np.array(rows, dtype=_POINT_FIELDS) if rows else np.zeros(0, dtype=_POINT_FIELDS)
        steps, values, walls = (
            np.ascontiguousarray(table[c]) for c in ("step", "value", "wall_ns")
        )
        count = len(values) if points is None else points
        not_finite = len(values) - int(np.isfinite(values).sum())
        return SeriesColumns(name, agent_id, steps, values, walls, count, not_finite)

    def _series_extremes(
        self,
        cursor: sqlite3.Cursor,
        run_id: str,
        series_id: int,
        name: str,
        agent_id: str | None,
        lo: int,
        hi: int,
        buckets: int,
    ) -> SeriesColumns | None:
        """The downsampled read of :meth:`series_columns` by scanning inside SQLite; None
        when the range holds at most ``2 * buckets`` points. A range whose lowest or highest
        is infinite is read again whole (a test per row for infinities costs more)."""
        import numpy as np  # only here: `mosaic` commands start without numpy

        edges = np.unique(np.linspace(lo, hi + 1, buckets + 1).astype(np.int64))
        rows = cursor.execute(_EXTREMES, (run_id, series_id, json.dumps(edges.tolist()))).fetchall()
        points = nans = 0
        keys: dict[tuple[int, ...], None] = {}  # the keys of the extremes, each once
        for low, high in rows:
            count, numbers, *key = (int(part) for part in low.split())
            points += count
            nans += count - numbers
            if numbers:
                keys.update(dict.fromkeys([tuple(key), tuple(int(p) for p in high.split())]))
        if points <= 2 * buckets:
            return None
        by_key = self._points_sql(_VALUES_BY_KEY)
        got = cursor.execute(by_key, (run_id, series_id, json.dumps(list(keys)))).fetchall()
        out = self._columns(name, agent_id, got, points)
        steps, values, walls = out.steps, out.values, out.wall_ns
        infinite = 0
        if out.not_finite:  # ranges holding an infinity: read whole, their finite extremes
            bucket = np.searchsorted(edges, steps, side="right") - 1
            bad = np.unique(bucket[~np.isfinite(values)])
            keep = ~np.isin(bucket, bad)
            parts = [(steps[keep], values[keep], walls[keep])]
            for b in bad.tolist():
                span = (run_id, series_id, int(edges[b]), int(edges[b + 1]) - 1)
                found = cursor.execute(self._points_sql(_POINTS_IN), span).fetchall()
                whole = self._columns(name, agent_id, found)
                infinite += int(np.isinf(whole.values).sum())
                finite = np.flatnonzero(np.isfinite(whole.values))
                if finite.size:
                    shown = whole.values[finite]
                    pick = np.unique(finite[[np.argmin(shown), np.argmax(shown)]])
                    parts.append((whole.steps[pick], whole.values[pick], whole.wall_ns[pick]))
            steps, values, walls = (np.concatenate(c) for c in zip(*parts, strict=True))
            order = np.lexsort((walls, steps))
            steps, values, walls = steps[order], values[order], walls[order]
        return SeriesColumns(
            name, agent_id, steps, values, walls, points, nans + infinite, downsampled=True
        )

    def series_means(
        self, run_id: str, name: str, agent_id: str | None = None, *, buckets: int
    ) -> summary.SeriesMeans:
        """The mean of each of ``buckets`` equal step ranges of one series, from its first
        step to its last (:class:`~.summary.SeriesMeans`): from the block summaries, or a
        series without them read whole. A series the run does not have has no means."""
        import numpy as np  # only here: `mosaic` commands start without numpy

        if buckets < 1:
            raise ValueError(f"buckets={buckets}: give a positive number of buckets")
        full = self.resolve(run_id)
        nothing = np.zeros(0)
        out = summary.SeriesMeans(name, agent_id, nothing, nothing, nothing, 0, 0, buckets)
        cursor, found = self._series_row(full, name, agent_id)
        if found is None:
            return out
        series_id, lo, hi, stored, summarised = found
        if summarised:
            top = summary.top_level(stored, buckets)
            with self.snapshot():
                part = summary.cover(cursor, full, series_id, (lo, hi), buckets, top, means=True)
        else:
            whole = self.series_columns(full, name, agent_id)  # every point
            part = summary.Cover.of_points(whole.steps, whole.values, whole.wall_ns)
        steps, values, counts = summary.means(part, lo, buckets, (hi + 1 - lo) / buckets)
        return summary.SeriesMeans(
            name, agent_id, steps, values, counts, part.points, part.not_finite, buckets
        )

    def series_counts(self, run_id: str) -> SeriesCounts:
        """How many points a run's series hold, how many values were refused
        (:mod:`mosaic_sdk.runner.recording.series`), and how many series it has."""
        full = self.resolve(run_id)
        if not self._has_table("series"):
            return SeriesCounts(points=0, refused=0, series=0)
        row = self.conn.execute(
            "SELECT series_points AS points, series_refused AS refused,"
            " (SELECT count(*) FROM series WHERE run_id = ?1 AND points > 0) AS series"
            " FROM runs WHERE run_id = ?1",
            (full,),
        ).fetchone()
        return cast(SeriesCounts, row)

    def episode_lines(self, run_id: str, containing: str) -> Iterator[str]:
        """The episode lines (as written) that contain ``containing``, in order, read lazily."""
        pattern = "%" + containing.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cursor = summary.plain_cursor(self.conn)
        rows = cursor.execute(
            "SELECT raw FROM episodes WHERE run_id = ? AND raw LIKE ? ESCAPE '\\' ORDER BY line_no",
            (run_id, pattern + "%"),
        )
        return (raw for (raw,) in rows)


def status_text(run: Mapping[str, Any]) -> str:
    """The status of a stored run (a :meth:`RunStore.get_run` dict) as people read it: the
    stored status, ``running (runner died: pid N is gone)``, or ``running (stalled: no
    output for S s, limit L s)`` (S counted from its last line to now)."""
    if run["status"] == "running" and run.get("runner_alive") is False:
        return f"running (runner died: pid {run.get('runner_pid')} is gone)"
    stalled = run.get("stalled")
    if run["status"] == "running" and stalled:
        last = stalled.get("last_line_unix")
        silent = stalled.get("silent_seconds")
        if isinstance(last, (int, float)) and not isinstance(last, bool):
            silent = max(time.time() - last, silent if isinstance(silent, (int, float)) else 0)
        limit = stalled.get("limit_seconds")
        said = "" if not isinstance(silent, (int, float)) else f": no output for {silent:.0f} s"
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            said += f", limit {limit:g} s"
        return f"running (stalled{said})"
    return str(run["status"])
