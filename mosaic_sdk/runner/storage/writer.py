"""The store writer: a thread that commits batches of rows, one transaction per batch, in order."""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage import store as store_sql
from mosaic_sdk.runner.storage.rows import LineBatch, insert_batch, insert_each, storable

#: A stall is reported once it lasts this long (seconds), then every REPORT_EVERY seconds.
REPORT_FIRST = 2.0
REPORT_EVERY = 10.0
#: After close, how long a store that refuses writes is retried before the rest is lost (s).
GIVE_UP_AFTER = 30.0
#: Queued batches are merged into one transaction up to this many rows (see ``_loop``).
MERGE_ROWS = 8192


class StoreWriter:
    """A thread that commits batches to the store; it never gives a row up silently.

    A batch SQLite cannot bind is inserted again as ``storable`` rows. A store that refuses
    writes (locked, disk full) is retried with backoff, queued batches merging into a backlog
    of at most ``max_backlog_rows``; past that :meth:`submit` waits unless the run is being
    abandoned. Rows still unstored ``give_up_after`` seconds after :meth:`close` are counted
    in :attr:`lost_rows`. ``on_commit(batch)`` is called on the writer's thread after each
    commit with the rows as stored; it must return at once (an exception is reported once)."""

    def __init__(
        self,
        path: Path,
        run_id: str,
        max_pending: int = 64,
        *,
        max_backlog_rows: int = 100_000,
        merge_rows: int = MERGE_ROWS,
        busy_timeout: float = 1.0,
        give_up_after: float | None = None,
        abandon: Callable[[], bool] | None = None,
        report: Callable[[str], None] | None = None,
        on_commit: Callable[[LineBatch], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.max_backlog_rows = max_backlog_rows
        self.merge_rows = merge_rows
        self.give_up_after = GIVE_UP_AFTER if give_up_after is None else give_up_after
        self._abandon = abandon or (lambda: False)
        #: Where stalls and losses are told (default: the process's reporter).
        self._report = report or current_reporter().warn
        self._on_commit = on_commit
        self._queue: queue.Queue[LineBatch] = queue.Queue(maxsize=max_pending)
        # A short busy timeout: the writer waits for a lock in its own loop, able to stop.
        self._conn = store_sql.connect(self.path, timeout=busy_timeout)
        # Checkpoint every ~16 MB instead of ~4 MB (about 10% less CPU per row measured).
        self._conn.execute("PRAGMA wal_autocheckpoint=4000")
        self.committed_rows = 0
        #: The thread ended on an error (it gave up on a stalled store, or raised), not at close.
        self.failed = False
        #: Rows stored as raw log lines (``kind = 'unstored'``) because their table refused them.
        self.degraded_rows = 0
        self.transactions = 0
        #: What made rows get lost (None while nothing was lost).
        self.error: BaseException | None = None
        #: Since when (monotonic) the store refuses writes; None while it takes them.
        self.stalled_since: float | None = None
        self.stall_error: BaseException | None = None
        self._reported_at: float | None = None
        self._submitted = 0
        self._dropped = 0
        self._lock = threading.Lock()
        self._closing_at: float | None = None
        self._give_up = threading.Event()
        self._stopped = False  # the thread has ended (normally or not)
        self._thread = threading.Thread(target=self._loop, name="mosaic-store-writer", daemon=True)
        self._thread.start()

    # -- the producers' side ----------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def lost_rows(self) -> int:
        """Rows given to :meth:`submit` that are not (and, once stopped, never will be) stored."""
        with self._lock:
            if self._stopped or not self._thread.is_alive():
                return self._submitted - self.committed_rows
            return self._dropped

    def submit(self, batch: LineBatch) -> None:
        """Queue a batch. Waits while the queue is full and the writer makes progress; gives
        the batch up (counted in :attr:`lost_rows`) when the writer has stopped, or when the
        store is stalled and ``abandon()`` says the run is being given up."""
        size = len(batch)
        with self._lock:
            self._submitted += size
        while True:
            if not self._thread.is_alive():
                self._drop(size, None)
                return
            try:
                self._queue.put(batch, timeout=0 if self.stalled_since is not None else 0.2)
                return
            except queue.Full:
                if self.stalled_since is not None:
                    if self._abandon():
                        self._drop(size, self.stall_error)
                        return
                    time.sleep(0.2)

    def close(
        self, timeout: float | None = None, abandon: Callable[[], bool] | None = None
    ) -> None:
        """Commit everything queued, then stop the thread (idempotent). A stalled store is
        retried for ``give_up_after`` seconds from the first call; ``abandon()`` true gives up
        at once; ``timeout`` bounds the wait (what is not stored by then counts as lost)."""
        if self._closing_at is None:
            self._closing_at = time.monotonic()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._thread.is_alive():
            if abandon is not None and abandon():
                self._give_up.set()
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                break
            self._thread.join(left)
        if self._thread.is_alive():  # stuck (e.g. in a very long commit): stop counting on it
            self._give_up.set()
            with self._lock:
                self._stopped = True
                self.error = self.error or TimeoutError("the store writer did not finish in time")

    def _drop(self, rows: int, exc: BaseException | None) -> None:
        with self._lock:
            self._dropped += rows
            self.error = self.error or exc or RuntimeError("the store writer stopped")

    # -- the thread -------------------------------------------------------------------------
    def _loop(self) -> None:
        pending: LineBatch | None = None
        delay = 0.02
        try:
            while True:
                if pending is None:
                    try:
                        pending = self._queue.get(timeout=0.05)
                    except queue.Empty:
                        if self._closing_at is not None:
                            return
                        continue
                # Batches queued meanwhile go into the same transaction (up to ``merge_rows``;
                # while stalled, up to the backlog): a fast run gets fewer, larger ones.
                self._merge_queued(
                    pending,
                    self.max_backlog_rows if self.stalled_since is not None else self.merge_rows,
                )
                try:
                    self._commit(pending)
                except sqlite3.OperationalError as exc:  # locked, busy, full: try again later
                    self._stalled(exc, len(pending))
                    if self._should_give_up():
                        self._drop(len(pending), exc)
                        pending = None
                        self._drain_queue(exc)
                        self.failed = True
                        return
                    self._give_up.wait(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                except Exception as exc:  # noqa: BLE001 - count the batch, keep writing
                    self._drop(len(pending), exc)
                else:
                    self._resumed()
                pending, delay = None, 0.02
        except BaseException as exc:  # noqa: BLE001 - a thread has nobody to raise to
            self.failed = True
            with self._lock:
                self.error = self.error or exc
        finally:
            with self._lock:
                self._stopped = True
            self._conn.close()

    def _should_give_up(self) -> bool:
        if self._give_up.is_set():
            return True
        closing = self._closing_at
        return closing is not None and time.monotonic() - closing >= self.give_up_after

    def _merge_queued(self, pending: LineBatch, limit: int) -> None:
        """Move queued batches into ``pending`` while it holds fewer than ``limit`` rows."""
        while len(pending) < limit:
            try:
                pending.absorb(self._queue.get_nowait())
            except queue.Empty:
                return

    def _drain_queue(self, exc: BaseException) -> None:
        while True:
            try:
                self._drop(len(self._queue.get_nowait()), exc)
            except queue.Empty:
                return

    def _commit(self, batch: LineBatch) -> None:
        lost = 0
        stored = batch
        try:
            self._transaction(batch)
        except sqlite3.OperationalError:
            raise
        except Exception:  # noqa: BLE001 - a value SQLite cannot bind: store rows that bind
            safe, degraded = storable(batch)
            stored = safe
            try:
                self._transaction(safe)
            except sqlite3.OperationalError:
                raise
            except Exception:  # noqa: BLE001 - a row its table refuses: one row at a time
                stored = LineBatch(batch.serial)  # the rows that went into their own table
                more, lost, exc = self._transaction(safe, partial(insert_each, kept=stored))
                degraded += more
                if lost:
                    self._drop(lost, exc)
            self.degraded_rows += degraded
        with self._lock:
            self.transactions += 1
            self.committed_rows += len(batch) - lost  # the lost ones are in _dropped
        if self._on_commit is not None:
            try:
                self._on_commit(stored)
            except Exception as exc:  # noqa: BLE001 - the rows are stored: report, go on
                on_commit, self._on_commit = self._on_commit, None
                self._report(f"the commit callback {on_commit!r} raised {exc!r}; not called again")

    def _transaction(self, batch: LineBatch, insert: Callable[..., Any] | None = None) -> Any:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = (insert or insert_batch)(conn, self.run_id, batch)
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:  # pragma: no cover - the original error matters more
                    pass
            raise

    def _stalled(self, exc: BaseException, rows: int) -> None:
        now = time.monotonic()
        if self.stalled_since is None:
            self.stalled_since = now
        self.stall_error = exc
        waited = now - self.stalled_since
        # short waits happen when runners share a store: say something once it lasts
        last = self._reported_at
        due = waited >= REPORT_FIRST if last is None else now - last >= REPORT_EVERY
        if due:
            self._reported_at = now
            self._report(
                f"cannot write to the store {self.path} ({exc}) for {waited:.0f}s; retrying, "
                f"{rows} rows wait in memory (the worker is paused when "
                f"{self.max_backlog_rows} wait; Ctrl-C stops the run)"
            )

    def _resumed(self) -> None:
        if self.stalled_since is not None:
            waited = time.monotonic() - self.stalled_since
            self.stalled_since = None
            if self._reported_at is not None:
                self._report(f"the store {self.path} takes writes again after {waited:.1f}s")
            self._reported_at = None
