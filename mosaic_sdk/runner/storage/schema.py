"""The SQLite store's file: its tables, the statements that fill them, and opening it.

One WAL-mode file (created ``0600``) holds every run with its events, steps, episodes, log
lines, series and sweeps (tables: ``docs/reference/runner.md``). Opening for writing upgrades
an older store; a newer one is refused. What each ``SCHEMA_VERSION`` added:

- 3: the ``sweeps`` and ``sweep_trials`` tables;
- 4: ``runs.control_protocol`` (NULL: the worker reads no commands);
- 5: the ``series`` and ``series_points`` tables, ``runs.series_points`` and ``series_refused``;
- 6: ``sweep_trials.parent_run_id`` (the run a population-based-training attempt resumed);
- 7: the ``series_blocks`` table and ``series.summarised``;
- 8: the ``series_negative_zeros`` table (SQLite stores ``-0.0`` as ``0``);
- 9: ``episodes.unfinished`` (an episode the run's end cut off) and
  ``runs.unfinished_episodes``; ``runs.episodes`` and ``runs.last_episode_return`` count
  finished episodes only (an older store's rows are flagged, and its counts redone, by the
  migration).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from mosaic_sdk.runner.storage import summary
from mosaic_sdk.runner.storage.records import EpisodeRow, StepRow
from mosaic_sdk.telemetry.unfinished import raw_is_unfinished

SCHEMA_VERSION = 9
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
    last_episode_return REAL,
    lost_rows INTEGER NOT NULL DEFAULT 0,
    runner_start_ticks INTEGER,
    observers_json TEXT,
    unfinished_episodes INTEGER NOT NULL DEFAULT 0
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
    agent_id TEXT,
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
    agent_id TEXT,
    unfinished INTEGER NOT NULL DEFAULT 0,
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

# Steps and episodes columns in table order (the fields of the records handed to observers).
STEP_COLUMNS: tuple[str, ...] = StepRow._fields
EPISODE_COLUMNS: tuple[str, ...] = EpisodeRow._fields
# Version 3: sweeps (mosaic_sdk.sweeps).
_SWEEPS_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweeps (
    sweep_id TEXT PRIMARY KEY,
    worker TEXT NOT NULL,
    engine TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    ended_at REAL,
    spec_json TEXT NOT NULL,
    metric TEXT NOT NULL,
    mode TEXT NOT NULL,
    driver_pid INTEGER,
    driver_host TEXT,
    engine_state TEXT,
    error TEXT
);
CREATE TABLE IF NOT EXISTS sweep_trials (
    sweep_id TEXT NOT NULL,
    trial_key TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    run_id TEXT,
    params_json TEXT NOT NULL,
    status TEXT NOT NULL,
    metric REAL,
    node TEXT,
    error TEXT,
    PRIMARY KEY (sweep_id, trial_key, attempt)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sweep_trials_by_run ON sweep_trials (run_id);
"""

# Version 5: series.
_SERIES_SCHEMA = """
CREATE TABLE IF NOT EXISTS series (
    run_id TEXT NOT NULL,
    series_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    agent_id TEXT,
    points INTEGER NOT NULL DEFAULT 0,
    first_step INTEGER,
    last_step INTEGER,
    last_value REAL,
    last_wall_ns INTEGER,
    PRIMARY KEY (run_id, series_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS series_by_name ON series (run_id, name, agent_id);
CREATE TABLE IF NOT EXISTS series_points (
    run_id TEXT NOT NULL,
    series_id INTEGER NOT NULL,
    step INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    line_no INTEGER NOT NULL,
    value REAL,
    PRIMARY KEY (run_id, series_id, step, wall_ns, line_no)
) WITHOUT ROWID;
"""
# Version 8: the keys of the points whose value is -0.0 (a REAL column stores a float with no
# fraction as an integer, and -0.0 as 0: reads give the sign back from here).
_NEGATIVE_ZEROS_SCHEMA = """
CREATE TABLE IF NOT EXISTS series_negative_zeros (
    run_id TEXT NOT NULL,
    series_id INTEGER NOT NULL,
    step INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    line_no INTEGER NOT NULL,
    PRIMARY KEY (run_id, series_id, step, wall_ns, line_no)
) WITHOUT ROWID;
"""


INSERT_STEP = (
    f"INSERT INTO steps ({', '.join(STEP_COLUMNS)}) VALUES ({', '.join('?' * len(STEP_COLUMNS))})"
)
INSERT_EPISODE = (
    f"INSERT INTO episodes ({', '.join(EPISODE_COLUMNS)})"
    f" VALUES ({', '.join('?' * len(EPISODE_COLUMNS))})"
)
INSERT_EVENT = (
    "INSERT INTO events (run_id, line_no, seq, event, ts_unix_ns, synthesised, payload_json,"
    " raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_LOG = (
    "INSERT INTO log_lines (run_id, stream, line_no, kind, partial, error, text)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
INSERT_SERIES = (
    "INSERT OR IGNORE INTO series (run_id, series_id, name, agent_id) VALUES (?, ?, ?, ?)"
)
INSERT_POINT = (
    "INSERT INTO series_points (run_id, series_id, step, wall_ns, line_no, value)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
INSERT_NEGATIVE_ZERO = (
    "INSERT OR IGNORE INTO series_negative_zeros (run_id, series_id, step, wall_ns, line_no)"
    " VALUES (?, ?, ?, ?, ?)"
)
#: Adds a batch's summary of one series (its points, first step, and its last point when
#: that comes at a larger step, or the same step later) to the series' row.
UPDATE_SERIES = (
    "UPDATE series SET points = points + ?1,"
    " first_step = min(coalesce(first_step, ?2), ?2),"
    " last_value = CASE WHEN last_step IS NULL OR ?3 > last_step"
    " OR (?3 = last_step AND ?5 >= last_wall_ns) THEN ?4 ELSE last_value END,"
    " last_wall_ns = CASE WHEN last_step IS NULL OR ?3 > last_step"
    " OR (?3 = last_step AND ?5 >= last_wall_ns) THEN ?5 ELSE last_wall_ns END,"
    " last_step = max(coalesce(last_step, ?3), ?3)"
    " WHERE run_id = ?6 AND series_id = ?7"
)
UPDATE_SERIES_COUNTS = (
    "UPDATE runs SET series_points = series_points + ?, series_refused = series_refused + ?"
    " WHERE run_id = ?"
)
#: ``episodes`` adds the finished episodes, ``unfinished_episodes`` the others;
#: ``last_episode_return`` is the last finished episode's (the ingest's ``last_return``).
UPDATE_COUNTS = (
    "UPDATE runs SET lines = lines + ?, steps = steps + ?, episodes = episodes + ?,"
    " unfinished_episodes = unfinished_episodes + ?,"
    " events = events + ?, log_lines = log_lines + ?, invalid_lines = invalid_lines + ?,"
    " stderr_lines = stderr_lines + ?,"
    " last_episode_return = coalesce(?, last_episode_return) WHERE run_id = ?"
)


class StoreError(Exception):
    """The store cannot be opened or does not hold what was asked for (one-line message)."""


class UnknownRunError(StoreError):
    """No run with that id (or id prefix) is in the store."""


#: Columns added after version 1, by table (added by ``ALTER TABLE`` to older stores).
_ADDED_COLUMNS = {
    "runs": {
        "lost_rows": "INTEGER NOT NULL DEFAULT 0",
        "runner_start_ticks": "INTEGER",
        "observers_json": "TEXT",
        "control_protocol": "INTEGER",
        "series_points": "INTEGER NOT NULL DEFAULT 0",
        "series_refused": "INTEGER NOT NULL DEFAULT 0",
    },
    "steps": {"agent_id": "TEXT"},
    "episodes": {"agent_id": "TEXT"},
}

#: Version 9: the unfinished flag and count (added by :func:`_add_unfinished`, which also
#: flags the rows an older store holds).
_UNFINISHED_COLUMNS = {
    "runs": {"unfinished_episodes": "INTEGER NOT NULL DEFAULT 0"},
    "episodes": {"unfinished": "INTEGER NOT NULL DEFAULT 0"},
}

#: Columns added to the sweeps' tables (version 6), after those tables are made.
_ADDED_SWEEP_COLUMNS = {"sweep_trials": {"parent_run_id": "TEXT"}}

#: Indexes that need the added columns (made after them).
_INDEXES = """
CREATE INDEX IF NOT EXISTS steps_by_agent ON steps (run_id, agent_id)
    WHERE agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS episodes_by_agent ON episodes (run_id, agent_id)
    WHERE agent_id IS NOT NULL;
"""


def _check_path(path: Path) -> None:
    if not path.parent.is_dir():
        raise StoreError(
            f"the store's directory {path.parent} does not exist; create it "
            "(mkdir -p) or pass another --store"
        )
    if path.is_dir():
        raise StoreError(
            f"the store path {path} is a directory; pass a file name, e.g. runs.sqlite"
        )


def _create_private(path: Path) -> None:
    """Create ``path`` readable by its owner only, unless it exists (SQLite gives its sidecars
    the same mode)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot create the store {path}: {exc.strerror or exc}") from None


def _schema_version(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:  # no meta table: a new file
        return None
    return None if row is None else str(row[0])


def _refuse_unknown_version(path: Path, version: str | None) -> None:
    """Refuse a store whose ``schema_version`` this SDK does not know (a newer SDK's, or not
    a number), before anything is written."""
    if version is None:
        return
    try:
        if int(version) <= SCHEMA_VERSION:
            return
        said = f"schema version {int(version)}"
    except ValueError:
        said = f"schema version {version[:40]!r}"
    raise StoreError(
        f"the store {path} has {said}, newer than this SDK's store schema version "
        f"{SCHEMA_VERSION}; it was written by a newer mosaic-worker-sdk: upgrade the SDK "
        "(pip install -U mosaic-worker-sdk) or pass another --store"
    )


def _sidecars(path: Path) -> tuple[Path, Path]:
    """The ``-wal`` and ``-shm`` files SQLite keeps beside a WAL-mode store."""
    return Path(str(path) + "-wal"), Path(str(path) + "-shm")


def _close_refused(conn: sqlite3.Connection, path: Path, had: tuple[bool, bool]) -> None:
    """Close a connection to a store that is being refused and remove the ``-wal`` and
    ``-shm`` files that opening it made (SQLite leaves a corrupt file's behind); files that
    were there before are someone else's."""
    try:
        conn.close()
    except sqlite3.Error:
        pass
    for sidecar, existed in zip(_sidecars(path), had, strict=True):
        if not existed:
            try:
                sidecar.unlink(missing_ok=True)
            except OSError:
                pass  # not ours to insist on: the refusal is what the user needs


def _add_columns(conn: sqlite3.Connection, added: dict[str, dict[str, str]]) -> None:
    for table, columns in added.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column, decl in columns.items():
            if column not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a new or older store to ``SCHEMA_VERSION`` (one transaction: all or nothing)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        _add_columns(conn, _ADDED_COLUMNS)
        _add_unfinished(conn)
        for statement in (_INDEXES + _SWEEPS_SCHEMA + _SERIES_SCHEMA).split(";"):
            if statement.strip():
                conn.execute(statement)
        _add_columns(conn, _ADDED_SWEEP_COLUMNS)
        _add_series_blocks(conn)
        conn.execute(_NEGATIVE_ZEROS_SCHEMA)
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


#: The name of the SQL function :func:`raw_is_unfinished` is registered as.
RAW_UNFINISHED_SQL = "mosaic_raw_unfinished"


def register_functions(conn: sqlite3.Connection) -> None:
    """SQL functions the store's statements may call: ``mosaic_raw_unfinished(raw)`` (1 for
    a line flagged unfinished; a store older than ``episodes.unfinished`` reads it so)."""
    conn.create_function(RAW_UNFINISHED_SQL, 1, raw_is_unfinished, deterministic=True)


def _add_unfinished(conn: sqlite3.Connection) -> None:
    """Version 9: ``episodes.unfinished`` and ``runs.unfinished_episodes``. The episode rows
    an older store holds are flagged from their lines, and the counts of the runs that have
    such an episode redone: ``episodes`` and ``last_episode_return`` of finished ones."""
    if "unfinished" in {row[1] for row in conn.execute("PRAGMA table_info(episodes)")}:
        return
    _add_columns(conn, _UNFINISHED_COLUMNS)
    register_functions(conn)
    conn.execute(
        f"UPDATE episodes SET unfinished = 1 WHERE raw LIKE '%unfinished%'"
        f" AND {RAW_UNFINISHED_SQL}(raw) = 1"
    )
    cut = "(SELECT count(*) FROM episodes e WHERE e.run_id = runs.run_id AND e.unfinished = 1)"
    conn.execute(  # every SET reads the row as it was: episodes is the old count
        f"UPDATE runs SET unfinished_episodes = {cut}, episodes = max(0, episodes - {cut}),"
        " last_episode_return = (SELECT total_reward FROM episodes e"
        "  WHERE e.run_id = runs.run_id AND e.unfinished = 0"
        "  AND typeof(e.total_reward) IN ('integer', 'real')"
        "  AND abs(e.total_reward) <= 1.7976931348623157e308"
        "  ORDER BY e.line_no DESC LIMIT 1)"
        " WHERE run_id IN (SELECT run_id FROM episodes WHERE unfinished = 1)"
    )


def _add_series_blocks(conn: sqlite3.Connection) -> None:
    """Version 7: the series' block summaries (:mod:`~mosaic_sdk.runner.storage.summary`),
    built for the series an older store already holds."""
    if "summarised" in {row[1] for row in conn.execute("PRAGMA table_info(series)")}:
        return
    _add_columns(conn, {"series": summary.SERIES_COLUMNS})
    conn.execute(summary.BLOCKS_SCHEMA)
    summary.build_all(conn)


#: Page size of a new store: rows hold the raw line (~200-300 bytes), and 16 KiB pages
#: instead of 4 KiB cost about 13% less CPU per step row. A WAL-mode store keeps the
#: page size it was made with.
PAGE_SIZE = 16384


def connect(path: Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """Open ``path`` (creating the file, not its directory) in WAL mode with the schema."""
    path = Path(path)
    _check_path(path)
    _create_private(path)
    wal, shm = _sidecars(path)
    had = (wal.exists(), shm.exists())
    try:
        conn = sqlite3.connect(
            str(path),
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
            factory=summary.Connection,  # keeps the series' open blocks between batches
        )
    except sqlite3.Error as exc:
        raise StoreError(
            f"cannot open the store {path}: {exc} (is it a mosaic store? pass another --store)"
        ) from None
    try:
        # read before anything is written: a newer SDK's store is refused untouched
        version = _schema_version(conn)
        _refuse_unknown_version(path, version)
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect on a new, empty file only
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=OFF")
        register_functions(conn)
        if version != str(SCHEMA_VERSION):  # else: nothing to write, no lock
            _migrate(conn)
    except (StoreError, sqlite3.DatabaseError) as exc:
        _close_refused(conn, path, had)
        if isinstance(exc, StoreError):
            raise
        raise StoreError(
            f"cannot open the store {path}: {exc} (is it a mosaic store? pass another --store)"
        ) from None
    return conn


def connect_readonly(path: Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """Open ``path`` for reading only: no schema, no WAL set-up, nothing written. A store the
    user may not write whose ``-shm`` cannot be made is opened as immutable when no ``-wal``
    holds pages (nobody is writing)."""
    path = Path(path)
    _check_path(path)
    if not path.exists():
        raise StoreError(f"the store {path} does not exist; pass another --store")
    base = path.absolute().as_uri()
    wal, shm = _sidecars(path)
    had = (wal.exists(), shm.exists())
    last: sqlite3.Error | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        if query.endswith("immutable=1") and wal.exists() and wal.stat().st_size > 0:
            break  # a writer's pages are in the WAL: immutable would not see them
        try:
            conn = sqlite3.connect(
                base + query,
                uri=True,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as exc:
            _close_refused(conn, path, had)
            last = exc
            if not isinstance(exc, sqlite3.OperationalError):
                break  # not a database: no other way of opening helps
            continue
        try:
            if "runs" not in tables:
                raise StoreError(
                    f"{path} is not a mosaic store (no runs table); pass another --store"
                )
            _refuse_unknown_version(path, _schema_version(conn))
        except StoreError:
            _close_refused(conn, path, had)
            raise
        register_functions(conn)
        return conn
    raise StoreError(
        f"cannot read the store {path}: {last} (is it a mosaic store, and may you read it "
        "and its directory?)"
    )
