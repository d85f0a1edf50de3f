"""The SQLite store of runs: one file holds every run, its lifecycle events, steps, episodes and
log lines.

Layout (``SCHEMA_VERSION`` 1):

- ``runs``: one row per run: worker, status (``running`` | ``completed`` | ``failed`` |
  ``cancelled``), exit code, times, the runner's pid and host, run directory, config, and the
  running counts (``steps``, ``episodes``, ``events``, ``log_lines``...) that the writer updates
  in the same transaction as the rows it adds, so a reader never sees them disagree.
- ``events``: lifecycle lines (``run_started``, ``heartbeat``, ``run_completed``...), with
  ``synthesised = 1`` for the ones the runner wrote itself (a ``run_failed`` for a worker that
  died silently, a ``run_cancelled`` after Ctrl-C).
- ``steps`` and ``episodes``: the fields a dashboard queries, in columns, plus ``raw``: the line
  exactly as the worker wrote it (full fidelity: observations, actions, metadata).
- ``log_lines``: everything that is not telemetry: library output on stdout (``kind = 'log'``),
  broken telemetry (``kind = 'invalid'``, with the reason in ``error``), and every stderr line
  (``stream = 'stderr'``). ``partial = 1`` marks a last line that ended without a newline.

Every table but ``runs`` is keyed by ``(run_id, [stream,] line_no)`` (``WITHOUT ROWID``: the key
is the table's own B-tree, so rows of one run sit together and appending costs one tree).
``line_no`` is the 1-based position of the line in the worker's stdout (stderr has its own
numbering), so a run's stream can be rebuilt in order across the tables.

The file is in WAL mode: readers (``mosaic runs show``, a dashboard) never block the writer.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
STATUSES = ("running", "completed", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    worker TEXT NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    error TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    runner_pid INTEGER,
    runner_host TEXT,
    worker_pid INTEGER,
    run_dir TEXT,
    stderr_path TEXT,
    config_json TEXT,
    argv_json TEXT,
    lines INTEGER NOT NULL DEFAULT 0,
    steps INTEGER NOT NULL DEFAULT 0,
    episodes INTEGER NOT NULL DEFAULT 0,
    events INTEGER NOT NULL DEFAULT 0,
    log_lines INTEGER NOT NULL DEFAULT 0,
    invalid_lines INTEGER NOT NULL DEFAULT 0,
    stderr_lines INTEGER NOT NULL DEFAULT 0,
    last_episode_return REAL
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    line_no INTEGER NOT NULL,
    seq INTEGER,
    event TEXT NOT NULL,
    ts_unix_ns INTEGER,
    synthesised INTEGER NOT NULL DEFAULT 0,
    payload_json TEXT,
    raw TEXT NOT NULL,
    PRIMARY KEY (run_id, line_no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL,
    line_no INTEGER NOT NULL,
    seq INTEGER,
    episode_index INTEGER,
    step_index INTEGER,
    reward REAL,
    terminated INTEGER,
    truncated INTEGER,
    ts_unix_ns INTEGER,
    raw TEXT NOT NULL,
    PRIMARY KEY (run_id, line_no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS episodes (
    run_id TEXT NOT NULL,
    line_no INTEGER NOT NULL,
    seq INTEGER,
    episode_index INTEGER,
    total_reward REAL,
    steps INTEGER,
    terminated INTEGER,
    truncated INTEGER,
    ts_unix_ns INTEGER,
    raw TEXT NOT NULL,
    PRIMARY KEY (run_id, line_no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log_lines (
    run_id TEXT NOT NULL,
    stream TEXT NOT NULL,
    line_no INTEGER NOT NULL,
    kind TEXT NOT NULL,
    partial INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    text TEXT NOT NULL,
    PRIMARY KEY (run_id, stream, line_no)
) WITHOUT ROWID;
"""

INSERT_STEP = (
    "INSERT INTO steps (run_id, line_no, seq, episode_index, step_index, reward, terminated,"
    " truncated, ts_unix_ns, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_EPISODE = (
    "INSERT INTO episodes (run_id, line_no, seq, episode_index, total_reward, steps, terminated,"
    " truncated, ts_unix_ns, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_EVENT = (
    "INSERT INTO events (run_id, line_no, seq, event, ts_unix_ns, synthesised, payload_json,"
    " raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_LOG = (
    "INSERT INTO log_lines (run_id, stream, line_no, kind, partial, error, text)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_COUNTS = (
    "UPDATE runs SET lines = lines + ?, steps = steps + ?, episodes = episodes + ?,"
    " events = events + ?, log_lines = log_lines + ?, invalid_lines = invalid_lines + ?,"
    " stderr_lines = stderr_lines + ?,"
    " last_episode_return = coalesce(?, last_episode_return) WHERE run_id = ?"
)


class StoreError(Exception):
    """The store cannot be opened or does not hold what was asked for (one-line message)."""


class UnknownRunError(StoreError):
    """No run with that id (or id prefix) is in the store."""


def connect(path: Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """Open ``path`` (creating the file, not its directory) in WAL mode with the schema."""
    path = Path(path)
    if not path.parent.is_dir():
        raise StoreError(
            f"the store's directory {path.parent} does not exist; create it "
            "(mkdir -p) or pass another --store"
        )
    if path.is_dir():
        raise StoreError(
            f"the store path {path} is a directory; pass a file name, e.g. runs.sqlite"
        )
    try:
        conn = sqlite3.connect(
            str(path), timeout=timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.executescript(_SCHEMA)
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"cannot open the store {path}: {exc} (is it a mosaic store? pass another --store)"
        ) from None
    return conn


def _row_dict(cursor: sqlite3.Cursor, row: Sequence[Any]) -> dict[str, Any]:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunStore:
    """A connection to one store file, with the queries ``mosaic runs`` needs.

    The runner's writes go through :class:`mosaic_sdk.runner.ingest.StoreWriter`, which owns a
    connection of its own; this class is for creating and finishing run rows and for reading.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.conn = connect(self.path)
        self.conn.row_factory = _row_dict

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
        config: dict[str, Any] | None = None,
        argv: Sequence[str] | None = None,
        stderr_path: Path | None = None,
    ) -> None:
        """Add a run with status ``running``; refuses an id the store already holds."""
        try:
            self.conn.execute(
                "INSERT INTO runs (run_id, worker, status, started_at, runner_pid, runner_host,"
                " run_dir, stderr_path, config_json, argv_json)"
                " VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    worker,
                    time.time(),
                    os.getpid(),
                    socket.gethostname(),
                    None if run_dir is None else str(run_dir),
                    None if stderr_path is None else str(stderr_path),
                    None if config is None else json.dumps(config, sort_keys=True),
                    None if argv is None else json.dumps(list(argv)),
                ),
            )
        except sqlite3.IntegrityError:
            raise StoreError(
                f"run id {run_id!r} is already in the store {self.path}; pick another --run-id "
                "(or leave it out to get a new one)"
            ) from None

    def set_worker_pid(self, run_id: str, pid: int) -> None:
        self.conn.execute("UPDATE runs SET worker_pid = ? WHERE run_id = ?", (pid, run_id))

    def finish_run(
        self, run_id: str, status: str, exit_code: int | None, error: str | None = None
    ) -> None:
        """Record the final status of a run."""
        if status not in STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        self.conn.execute(
            "UPDATE runs SET status = ?, exit_code = ?, error = ?, ended_at = ? WHERE run_id = ?",
            (status, exit_code, error, time.time(), run_id),
        )

    # -- reading ----------------------------------------------------------------------------
    def resolve(self, run_id: str) -> str:
        """The full id of ``run_id`` or of the one run whose id starts with it."""
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
        from mosaic_sdk.runner.paths import default_store_path

        try:
            return self.path.resolve() == default_store_path().resolve()
        except OSError:
            return False

    def get_run(self, run_id: str) -> dict[str, Any]:
        """The run's row as a dict, plus ``counts`` and ``runner_alive``."""
        full = self.resolve(run_id)
        row = self.conn.execute("SELECT * FROM runs WHERE run_id = ?", (full,)).fetchone()
        return self._summarise(row)

    def list_runs(self, limit: int | None = 20, worker: str | None = None) -> list[dict[str, Any]]:
        """The newest runs first."""
        sql = "SELECT * FROM runs"
        params: list[Any] = []
        if worker:
            sql += " WHERE worker = ?"
            params.append(worker)
        sql += " ORDER BY started_at DESC, run_id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [self._summarise(r) for r in self.conn.execute(sql, params).fetchall()]

    def _summarise(self, row: dict[str, Any]) -> dict[str, Any]:
        out = dict(row)
        out["counts"] = {
            "steps": row["steps"],
            "episodes": row["episodes"],
            "events": row["events"],
            "log_lines": row["log_lines"],
            "invalid_lines": row["invalid_lines"],
            "stderr_lines": row["stderr_lines"],
            "lines": row["lines"],
        }
        for key in out["counts"]:
            out.pop(key, None)
        out["config"] = json.loads(row["config_json"]) if row["config_json"] else None
        out["argv"] = json.loads(row["argv_json"]) if row["argv_json"] else None
        del out["config_json"], out["argv_json"]
        alive: bool | None = None
        if row["status"] == "running" and row["runner_pid"]:
            if row["runner_host"] == socket.gethostname():
                alive = pid_alive(int(row["runner_pid"]))
        out["runner_alive"] = alive
        end = row["ended_at"] if row["ended_at"] is not None else time.time()
        out["duration_seconds"] = round(max(0.0, end - row["started_at"]), 3)
        return out

    def events(self, run_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Lifecycle events of a run in order (the last ``limit`` when given)."""
        return self._tail(
            "SELECT line_no, seq, event, ts_unix_ns, synthesised, payload_json FROM events"
            " WHERE run_id = ?",
            run_id,
            limit,
        )

    def log_lines(
        self, run_id: str, limit: int | None = None, stream: str | None = None
    ) -> list[dict[str, Any]]:
        """Log lines of a run (stdout then stderr numbering; the last ``limit``)."""
        sql = "SELECT stream, line_no, kind, partial, error, text FROM log_lines WHERE run_id = ?"
        if stream is not None:
            sql += f" AND stream = '{'stderr' if stream == 'stderr' else 'stdout'}'"
        return self._tail(sql, run_id, limit)

    def _tail(self, sql: str, run_id: str, limit: int | None) -> list[dict[str, Any]]:
        if limit is None:
            return self.conn.execute(sql + " ORDER BY line_no", (run_id,)).fetchall()
        rows = self.conn.execute(sql + " ORDER BY line_no DESC LIMIT ?", (run_id, limit))
        return list(reversed(rows.fetchall()))

    def count_rows(self, run_id: str) -> dict[str, int]:
        """Counts by ``COUNT(*)`` over the tables (slower than ``counts``; for checking)."""
        out = {}
        for table in ("steps", "episodes", "events", "log_lines"):
            row = self.conn.execute(
                f"SELECT count(*) AS n FROM {table} WHERE run_id = ?", (run_id,)
            ).fetchone()
            out[table] = int(row["n"])
        return out


__all__ = [
    "SCHEMA_VERSION",
    "STATUSES",
    "RunStore",
    "StoreError",
    "UnknownRunError",
    "connect",
    "pid_alive",
]
