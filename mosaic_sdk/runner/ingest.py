"""From worker output to store rows: classify each line, batch the rows, write them on a thread.

:class:`LineIngest` turns stdout lines into rows of a :class:`LineBatch` (one
:func:`~mosaic_sdk.telemetry.reader.classify_line` per line, no other parsing);
:class:`StoreWriter` is a thread with its own SQLite connection that commits one batch per
transaction (``executemany`` per table, and the run's counters in the same transaction). The
supervisor decides when a batch is handed over: at ``batch_lines`` lines, ``flush_interval``
after its first line, at once for a lifecycle line, and at the end.

The queue between the two is bounded: when the disk is slower than the worker, the reader
stops reading, the pipe fills and the worker waits in ``write()``. Nothing is dropped.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
from itertools import chain
from pathlib import Path
from typing import Any

from mosaic_sdk.runner import store as store_sql
from mosaic_sdk.runner.lines import CutLine
from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH, classify_line

_INT64 = (-(2**63), 2**63 - 1)
#: A JSON text this short cannot nest deeper than MAX_JSON_DEPTH (each level takes 2 characters).
_SHALLOW_LEN = 2 * MAX_JSON_DEPTH

# json.loads minus its Python-level wrappers (two regex matches and two calls per line): the
# C scanner parses one JSON value at offset 0 and returns (value, end offset).
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class LineBatch:
    """Rows for one transaction, and what they add to the run's counters."""

    __slots__ = (
        "steps",
        "episodes",
        "events",
        "logs",
        "lines",
        "invalid",
        "stderr",
        "last_return",
        "serial",
        "first_at",
    )

    def __init__(self, serial: int = 0) -> None:
        self.steps: list[tuple[Any, ...]] = []
        self.episodes: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.logs: list[tuple[Any, ...]] = []
        self.lines = 0  # stdout lines in this batch
        self.invalid = 0
        self.stderr = 0
        self.last_return: float | None = None
        self.serial = serial
        self.first_at: float | None = None

    def __len__(self) -> int:
        return len(self.steps) + len(self.episodes) + len(self.events) + len(self.logs)


def _number(value: Any) -> Any:
    """A value SQLite can bind in a numeric column, else None (the raw line keeps it)."""
    if value is None or type(value) is float:
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else float(value)
    if isinstance(value, float):
        return float(value)
    return None


def _sanitised(rows: list[tuple[Any, ...]], numeric: range) -> list[tuple[Any, ...]]:
    out = []
    for row in rows:
        fixed = list(row)
        for i in numeric:
            fixed[i] = _number(fixed[i])
        out.append(tuple(fixed))
    return out


#: Row counts of the multi-row INSERT statements (a few shapes, so SQLite's statement cache
#: keeps them compiled); fewer rows than the smallest go through executemany.
_BLOCKS = (256, 128, 64, 32, 16)
_multi_row_sql: dict[tuple[str, int], str] = {}


def insert_rows(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """``executemany(sql, rows)``, but as multi-row ``INSERT ... VALUES (...), (...)`` blocks.

    One statement per block of up to 256 rows does the B-tree work in a single
    ``sqlite3_step`` (with the GIL released) instead of one step per row: about 30% less CPU
    per row measured. ``sql`` must end with its one ``VALUES (?, ...)`` group.
    """
    head, sep, group = sql.rpartition("VALUES ")
    start, total = 0, len(rows)
    for block in _BLOCKS:
        while total - start >= block:
            key = (sql, block)
            multi = _multi_row_sql.get(key)
            if multi is None:
                multi = _multi_row_sql[key] = head + sep + ", ".join([group] * block)
            conn.execute(multi, list(chain.from_iterable(rows[start : start + block])))
            start += block
    if start < total:
        conn.executemany(sql, rows[start:])


class LineIngest:
    """Classifies stdout lines of one run into batch rows and keeps the live counters.

    ``on_lifecycle(event_dict)`` is called for every lifecycle line, after it was put into the
    batch (the supervisor flushes that batch at once and runs the hooks once it is committed).
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.line_no = 0
        self.steps = 0
        #: Sum of the ``steps`` of the episode lines: env steps when step lines are throttled.
        self.episode_steps = 0
        self.episodes = 0
        self.events = 0
        self.log_lines = 0
        self.invalid_lines = 0
        self.recent_returns: list[float] = []
        self.last_event: str | None = None
        self.terminal_event: dict[str, Any] | None = None
        self.last_step: tuple[Any, Any] | None = None

    @property
    def env_steps(self) -> int:
        """Environment steps so far: the step lines, or the episodes' step counts when the
        worker throttles its step lines (whichever is larger)."""
        return max(self.steps, self.episode_steps)

    def add(
        self, batch: LineBatch, raws: list[bytes], partial_last: bool = False
    ) -> list[dict[str, Any]]:
        """Add ``raws`` to ``batch``; returns the lifecycle events among them, in order."""
        run_id = self.run_id
        steps, episodes, logs = batch.steps, batch.episodes, batch.logs
        lifecycle: list[dict[str, Any]] = []
        line_no = self.line_no
        steps_before, episodes_before = len(steps), len(episodes)
        last = len(raws) - 1
        scan = _scan_once
        for i, raw in enumerate(raws):
            line_no += 1
            if type(raw) is CutLine:  # longer than the maximum: kept as text, never parsed
                text = raw.decode("utf-8", "replace")
                kind = "invalid" if text.lstrip()[:1] in ("{", "[") else "log"
                partial = 1 if (partial_last and i == last) else 0
                logs.append((run_id, "stdout", line_no, kind, partial, raw.note(), text))
                batch.invalid += kind == "invalid"
                self.invalid_lines += kind == "invalid"
                self.log_lines += 1
                continue
            # Fast path for the bulk of the stream: a step line in our field names. For such a
            # line classify_line returns kind "step" and the parsed object unchanged (it only
            # renames the upstream aliases "episode"/"step", absent here), so one json.loads
            # gives the same answer; anything else goes through classify_line itself.
            text = raw.decode("utf-8", "replace")
            if text[-1:] == "\r":
                text = text[:-1]
            # (A line long enough to nest deeper than classify_line allows, with that many
            # brackets, goes to classify_line, which checks its depth.)
            if text[:2] == '{"' and (
                len(text) <= _SHALLOW_LEN or text.count("[") + text.count("{") <= MAX_JSON_DEPTH
            ):
                try:
                    d, end = scan(text, 0)
                except Exception:  # noqa: BLE001 - classify_line below says what is wrong
                    d, end = None, 0
                if (
                    end == len(text)
                    and type(d) is dict
                    and d.get("type") == "step"
                    and "episode_index" in d
                    and "step_index" in d
                ):
                    steps.append(
                        (
                            run_id,
                            line_no,
                            d.get("seq"),
                            d["episode_index"],
                            d["step_index"],
                            d.get("reward"),
                            d.get("terminated"),
                            d.get("truncated"),
                            d.get("ts_unix_ns"),
                            text,
                        )
                    )
                    continue
            item = classify_line(text)
            kind = item.kind
            d = item.data
            if kind == "step":
                steps.append(
                    (
                        run_id,
                        line_no,
                        d.get("seq"),
                        d.get("episode_index"),
                        d.get("step_index"),
                        d.get("reward"),
                        d.get("terminated"),
                        d.get("truncated"),
                        d.get("ts_unix_ns"),
                        item.text,
                    )
                )
            elif kind == "episode":
                total = d.get("total_reward")
                episodes.append(
                    (
                        run_id,
                        line_no,
                        d.get("seq"),
                        d.get("episode_index"),
                        total,
                        d.get("steps"),
                        d.get("terminated"),
                        d.get("truncated"),
                        d.get("ts_unix_ns"),
                        item.text,
                    )
                )
                if isinstance(total, (int, float)):
                    self.recent_returns.append(float(total))
                    batch.last_return = float(total)
                n_steps = d.get("steps")
                if type(n_steps) is int and n_steps > 0:
                    self.episode_steps += n_steps
            elif kind == "lifecycle":
                self._lifecycle(batch, line_no, d, item.text, synthesised=False)
                lifecycle.append(d)
            else:
                partial = 1 if (partial_last and i == last) else 0
                logs.append((run_id, "stdout", line_no, kind, partial, item.error, item.text))
                if kind == "invalid":
                    batch.invalid += 1
                    self.invalid_lines += 1
                self.log_lines += 1
        self.steps += len(steps) - steps_before
        self.episodes += len(episodes) - episodes_before
        batch.lines += len(raws)
        self.line_no = line_no
        if len(self.recent_returns) > 200:
            del self.recent_returns[:-100]
        return lifecycle

    def _lifecycle(
        self, batch: LineBatch, line_no: int, d: dict[str, Any], text: str, synthesised: bool
    ) -> None:
        event = d.get("event")
        name = event if isinstance(event, str) and event else "unknown"
        payload = d.get("payload")
        batch.events.append(
            (
                self.run_id,
                line_no,
                d.get("seq"),
                name,
                d.get("ts_unix_ns"),
                1 if synthesised else 0,
                None if payload is None else json.dumps(payload, sort_keys=True, default=str),
                text,
            )
        )
        self.events += 1
        self.last_event = name
        if name in ("run_completed", "run_failed", "run_cancelled"):
            self.terminal_event = d

    def add_synthesised(self, batch: LineBatch, event: dict[str, Any]) -> None:
        """Add an event the runner made up (numbered after the worker's last line)."""
        self.line_no += 1
        text = json.dumps(event, sort_keys=True, separators=(",", ":"), default=str)
        self._lifecycle(batch, self.line_no, event, text, synthesised=True)


class StoreWriter:
    """A thread that commits batches to the store, one transaction per batch, in order."""

    def __init__(self, path: Path, run_id: str, max_pending: int = 64) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self._queue: queue.Queue[LineBatch | None] = queue.Queue(maxsize=max_pending)
        self._conn = store_sql.connect(self.path)
        # Checkpoint the WAL into the database every ~16 MB instead of ~4 MB: fewer, larger
        # checkpoints (and fsyncs) while a run streams (about 10% less CPU per row measured).
        self._conn.execute("PRAGMA wal_autocheckpoint=4000")
        #: Serial of the newest batch made durable (batches from the supervisor count up).
        self.committed_serial = 0
        self.committed_rows = 0
        self.transactions = 0
        self.error: BaseException | None = None
        self.lost_rows = 0
        self._lock = threading.Lock()
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name="mosaic-store-writer", daemon=True)
        self._thread.start()

    def submit(self, batch: LineBatch) -> None:
        """Queue a batch (blocks while ``max_pending`` batches are waiting)."""
        while True:
            try:
                self._queue.put(batch, timeout=0.5)
                return
            except queue.Full:
                if not self._thread.is_alive():  # pragma: no cover - writer died
                    with self._lock:
                        self.lost_rows += len(batch)
                    return

    def close(self, timeout: float | None = None) -> None:
        """Commit everything queued, then stop the thread and close its connection.

        Idempotent; ``timeout`` bounds the wait for the thread (None: until it is done)."""
        if not self._closing:
            self._closing = True
            self._queue.put(None)
        self._thread.join(timeout)

    def _loop(self) -> None:
        conn = self._conn
        try:
            while True:
                batch = self._queue.get()
                if batch is None:
                    return
                if self.error is not None:
                    with self._lock:
                        self.lost_rows += len(batch)
                    continue
                try:
                    self._commit(conn, batch)
                except sqlite3.Error as exc:
                    self.error = exc
                    with self._lock:
                        self.lost_rows += len(batch)
        finally:
            conn.close()

    def _commit(self, conn: sqlite3.Connection, batch: LineBatch) -> None:
        for attempt in range(2):
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._insert(conn, batch, sanitise=attempt == 1)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                break
            except (sqlite3.InterfaceError, sqlite3.ProgrammingError, OverflowError):
                if attempt == 1:
                    raise
        self.transactions += 1
        self.committed_rows += len(batch)
        if batch.serial:
            self.committed_serial = batch.serial

    def _insert(self, conn: sqlite3.Connection, batch: LineBatch, sanitise: bool) -> None:
        steps, episodes = batch.steps, batch.episodes
        if sanitise:  # a worker wrote e.g. a list as reward: keep the raw line, null the column
            steps = _sanitised(steps, range(2, 9))
            episodes = _sanitised(episodes, range(2, 9))
        if steps:
            insert_rows(conn, store_sql.INSERT_STEP, steps)
        if episodes:
            insert_rows(conn, store_sql.INSERT_EPISODE, episodes)
        if batch.events:
            events = batch.events
            if sanitise:
                events = [
                    (r[0], r[1], _number(r[2]), r[3], _number(r[4]), r[5], r[6], r[7])
                    for r in events
                ]
            conn.executemany(store_sql.INSERT_EVENT, events)
        if batch.logs:
            conn.executemany(store_sql.INSERT_LOG, batch.logs)
        stdout_logs = len(batch.logs) - batch.stderr
        conn.execute(
            store_sql.UPDATE_COUNTS,
            (
                batch.lines,
                len(steps),
                len(episodes),
                len(batch.events),
                stdout_logs + batch.stderr,
                batch.invalid,
                batch.stderr,
                batch.last_return,
                self.run_id,
            ),
        )


class StderrIngest:
    """Receives the worker's stderr lines (on the stderr thread) and queues them as log rows."""

    def __init__(self, run_id: str, writer: StoreWriter) -> None:
        self.run_id = run_id
        self.writer = writer
        self.line_no = 0

    def __call__(self, raws: list[bytes], partial: bool) -> None:
        batch = LineBatch()
        for raw in raws:
            self.line_no += 1
            text = raw.decode("utf-8", "replace").rstrip("\r")
            note = raw.note() if type(raw) is CutLine else None
            batch.logs.append(
                (self.run_id, "stderr", self.line_no, "log", int(partial), note, text)
            )
        batch.stderr = len(raws)
        self.writer.submit(batch)


__all__ = ["LineBatch", "LineIngest", "StderrIngest", "StoreWriter"]
