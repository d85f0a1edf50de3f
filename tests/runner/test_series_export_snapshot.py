"""``mosaic runs export --what metrics`` (and ``--format tensorboard``) of a run being written:
every series is read in one read transaction, so series written together end at the same
write (issue 45: ten series written together exported cut at 49,408 / 57,600 / 60,000)."""

from __future__ import annotations

import csv
import io
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.runner.recording.ingest import LineIngest
from mosaic_sdk.runner.storage.export import export_run, iter_batches
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.storage.writer import StoreWriter

SERIES = [f"s{i}" for i in range(10)]


class TenSeriesWorker:
    """A run whose every metrics line reports the ten :data:`SERIES` at one step."""

    def __init__(self, path: Path, run_id: str = "LIVE") -> None:
        self.path, self.run_id, self.step = path, run_id, 0
        with RunStore(path) as store:
            store.create_run(run_id, "w")
        self.ingest = LineIngest(run_id)
        self.writer = StoreWriter(path, run_id, merge_rows=64)

    def batch(self, lines: int) -> LineBatch:
        out = LineBatch(self.step)
        raws = []
        for _ in range(lines):
            values = {name: float(self.step) for name in SERIES}
            payload = {"step": self.step, "values": values}
            line = {"type": "lifecycle", "event": "metrics", "payload": payload}
            raws.append(json.dumps({**line, "ts_unix_ns": 1_750_000_000_000_000_000}).encode())
            self.step += 1
        self.ingest.add(out, raws)
        return out

    def write(self, lines: int) -> None:
        """Write ``lines`` metrics lines in one transaction, and wait until it is committed."""
        before = self.writer.committed_rows
        self.writer.submit(self.batch(lines))
        while self.writer.committed_rows < before + lines:
            assert self.writer.alive, self.writer.error
            threading.Event().wait(0.005)

    def close(self) -> None:
        self.writer.close()
        assert self.writer.lost_rows == 0


def _counts(text: str) -> Counter[str]:
    return Counter(row["name"] for row in csv.DictReader(io.StringIO(text)))


def _export(store: RunStore, run_id: str) -> str:
    out = io.BytesIO()
    export_run(store, run_id, what="metrics", fmt="csv", output=out)
    return out.getvalue().decode()


def test_a_write_between_two_series_reads_is_in_none_of_them(tmp_path: Path) -> None:
    """A commit that lands while the export reads the first series: the later series do not
    see it either (before: they did, and the export ended each series elsewhere)."""
    worker = TenSeriesWorker(tmp_path / "runs.sqlite")
    worker.write(100)
    with RunStore(worker.path, readonly=True) as store:
        read = store.series_columns
        reads = []

        def reading(*args: Any, **kwargs: Any) -> Any:
            got = read(*args, **kwargs)
            reads.append(args[1])
            if len(reads) == 1:
                worker.write(50)  # ten series, written together, after the first was read
            return got

        store.series_columns = reading  # type: ignore[method-assign]
        counts = _counts(_export(store, "LIVE"))
    worker.close()
    assert len(reads) == len(SERIES)
    assert counts == dict.fromkeys(SERIES, 100), counts
    with RunStore(worker.path, readonly=True) as store:  # the next export has the 50 more
        assert _counts(_export(store, "LIVE")) == dict.fromkeys(SERIES, 150)


def test_iter_batches_alone_reads_one_state_of_the_run(tmp_path: Path) -> None:
    """``iter_batches`` (what an export streams) holds its own read transaction: a reader of
    it alone gets every series up to the same write, and none is left open after."""
    worker = TenSeriesWorker(tmp_path / "runs.sqlite")
    worker.write(100)
    with RunStore(worker.path, readonly=True) as store:
        read = store.series_columns
        reads = []

        def reading(*args: Any, **kwargs: Any) -> Any:
            got = read(*args, **kwargs)
            reads.append(args[1])
            if len(reads) == 1:
                worker.write(50)
            return got

        store.series_columns = reading  # type: ignore[method-assign]
        rows = [row for rows in iter_batches(store, "LIVE", "metrics") for row in rows]
        assert not store.conn.in_transaction
    worker.close()
    assert Counter(row[1] for row in rows) == dict.fromkeys(SERIES, 100)


def test_a_failed_export_ends_its_read_transaction(tmp_path: Path) -> None:
    """An export that stops half way (an output that refuses the bytes while the points are
    still being read) leaves no read transaction open on the store's connection."""
    worker = TenSeriesWorker(tmp_path / "runs.sqlite")
    for _ in range(8):
        worker.write(1000)  # 80,000 points: more than one batch of BATCH_ROWS
    worker.close()

    class Full(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            raise OSError(28, "No space left on device")

    with RunStore(worker.path, readonly=True) as store:
        try:
            export_run(store, "LIVE", what="metrics", fmt="jsonl", output=Full())
        except OSError as exc:
            kept = exc  # its traceback holds the export's frames, as a caller's handler may
        else:
            pytest.fail("the export did not fail")
        assert not store.conn.in_transaction
        assert kept.errno == 28


def test_exports_during_a_live_run_end_every_series_at_the_same_write(tmp_path: Path) -> None:
    """A writer thread writes the ten series together while the run is exported again and
    again: every export has as many points of each series."""
    worker = TenSeriesWorker(tmp_path / "runs.sqlite")
    worker.write(10)
    done = threading.Event()

    def write() -> None:
        try:
            for _ in range(200):
                worker.writer.submit(worker.batch(25))
        finally:
            done.set()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    seen = []
    try:
        with RunStore(worker.path, readonly=True) as store:
            while not done.is_set() or len(seen) < 3:
                counts = _counts(_export(store, "LIVE"))
                seen.append(counts["s0"])
                assert set(counts) == set(SERIES)
                assert len(set(counts.values())) == 1, counts
                if len(seen) >= 200:
                    break
    finally:
        thread.join(60)
        worker.close()
    assert seen == sorted(seen)  # the run grew while it was exported, never shrank


def test_tensorboard_export_reads_one_state_of_the_run(tmp_path: Path) -> None:
    pytest.importorskip("tensorboardX")
    from mosaic_sdk.runner.recording.tensorboard import export_tensorboard

    worker = TenSeriesWorker(tmp_path / "runs.sqlite")
    worker.write(100)
    with RunStore(worker.path, readonly=True) as store:
        read = store.series_columns
        calls = []

        def reading(*args: Any, **kwargs: Any) -> Any:
            got = read(*args, **kwargs)
            calls.append(len(got.steps))
            if len(calls) == 1:
                worker.write(50)
            return got

        store.series_columns = reading  # type: ignore[method-assign]
        written = export_tensorboard(store, "LIVE", tmp_path / "tb")
    worker.close()
    assert calls == [100] * len(SERIES) and written == 100 * len(SERIES)
