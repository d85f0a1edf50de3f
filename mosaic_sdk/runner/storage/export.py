"""A run's stored steps, episodes, events or series points as CSV, JSONL or Parquet, for other
tools (:func:`export_run`); rows are streamed a batch at a time and the store is only read.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mosaic_sdk.extras import require
from mosaic_sdk.runner.storage.records import ExportValues, Stored
from mosaic_sdk.runner.storage.schema import StoreError

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.store import RunStore

#: The most agent ids an error message names.
AGENTS_NAMED = 20
#: The Parquet type of each exported column that is no int64.
_NOT_INT = {
    **dict.fromkeys(("run_id", "event", "payload_json", "name", "agent_id", "raw"), "string"),
    **dict.fromkeys(("reward", "total_reward", "value", "wall_time"), "float64"),
}


def _typed(names: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, _NOT_INT.get(name, "int64")) for name in names.split())


#: What can be exported: the table and its columns, each with its Parquet type.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "steps": _typed(
        "run_id line_no seq episode_index step_index reward terminated truncated ts_unix_ns"
        " agent_id raw"
    ),
    "episodes": _typed(
        "run_id line_no seq episode_index total_reward steps terminated truncated ts_unix_ns"
        " agent_id unfinished raw"
    ),
    "events": _typed("run_id line_no seq event ts_unix_ns synthesised payload_json raw"),
    "metrics": _typed("run_id name agent_id step value wall_time"),
}
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
#: Rows fetched (and, for Parquet, written as one row group) at a time.
BATCH_ROWS = 65_536


class ExportError(StoreError):
    """The export cannot be done as asked (one line that says why and what to do)."""


def columns(what: str) -> tuple[str, ...]:
    """The column names of ``what`` (``steps``, ``episodes`` or ``events``)."""
    return tuple(name for name, _ in _table(what))


def _table(what: str) -> tuple[tuple[str, str], ...]:
    if what not in TABLES:
        raise ExportError(f"cannot export {what!r}: choose one of {', '.join(TABLES)}")
    return TABLES[what]


def format_for(path: str | Path | None, default: str = "csv") -> str:
    """The format a file name asks for by its suffix (``.csv``, ``.jsonl``/``.ndjson``,
    ``.parquet``/``.pq``), else ``default``."""
    if path is None or str(path) == "-":
        return default
    suffix = Path(path).suffix.lower()
    return {
        ".csv": "csv",
        ".jsonl": "jsonl",
        ".ndjson": "jsonl",
        ".parquet": "parquet",
        ".pq": "parquet",
    }.get(suffix, default)


def iter_batches(
    store: RunStore,
    run_id: str,
    what: str,
    agent: str | None = None,
    metrics: Sequence[str] | None = None,
    *,
    include_unfinished: bool = False,
) -> Iterator[list[ExportValues]]:
    """Lists of row tuples (at most :data:`BATCH_ROWS` each) of ``what`` of one run (a full
    id), in ``line_no`` order (series points: series by series, by step); only those of
    ``agent``, and of the series whose names match a glob of ``metrics``, when given.
    Episodes: the finished ones, and those the run's end cut off too with
    ``include_unfinished`` (their ``unfinished`` column is 1).

    Series points are read in one read transaction (:meth:`RunStore.snapshot`), held until
    the iterator is used up or closed: every series ends at the same write of a live run."""
    if what == "metrics":
        yield from _point_batches(store, run_id, agent, metrics)
        return
    cursor = store.row_cursor(
        run_id, what, columns(what), agent=agent, include_unfinished=include_unfinished
    )
    yield from iter(lambda: cursor.fetchmany(BATCH_ROWS), [])


def _point_batches(
    store: RunStore, run_id: str, agent: str | None, metrics: Sequence[str] | None
) -> Iterator[list[ExportValues]]:
    with store.snapshot():  # one state of a live run: its series end at the same write
        yield from _points_of(store, run_id, agent, metrics)


def _points_of(
    store: RunStore, run_id: str, agent: str | None, metrics: Sequence[str] | None
) -> Iterator[list[ExportValues]]:
    batch: list[ExportValues] = []
    for info in store.series(run_id):
        if agent is not None and info.agent_id != agent:
            continue
        if metrics and not any(fnmatchcase(info.name, m) for m in metrics):
            continue
        name, agent_id = info.name, info.agent_id
        points = store.series_columns(run_id, name, agent_id)
        walls = (points.wall_ns / 1e9).tolist()  # what int / 1e9 gives, at numpy's speed
        for step, value, wall in zip(
            points.steps.tolist(), points.values.tolist(), walls, strict=True
        ):
            batch.append((run_id, name, agent_id, step, value, wall))
            if len(batch) >= BATCH_ROWS:
                yield batch
                batch = []
    if batch:
        yield batch


class _Null:
    """Written by ``csv`` as an empty unquoted field (QUOTE_NONNUMERIC leaves what has
    ``__float__`` unquoted); ``None`` itself would be quoted."""

    __slots__ = ()

    def __float__(self) -> float:  # pragma: no cover - only its presence matters
        return 0.0

    def __str__(self) -> str:
        return ""


_NULL = _Null()


def _csv_row(row: ExportValues) -> tuple[Stored | _Null, ...]:
    return row if None not in row else tuple(_NULL if v is None else v for v in row)


def write_csv(batches: Iterator[list[ExportValues]], names: tuple[str, ...], out: IO[str]) -> int:
    """Write a header and the rows to the text stream ``out``; returns the row count."""
    # Every str quoted, numbers bare (floats by repr(): exact round trip), NULL an empty
    # unquoted field: a reader can tell NULL from "".
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(names)
    count = 0
    for rows in batches:
        writer.writerows(map(_csv_row, rows))
        count += len(rows)
    return count


def write_jsonl(batches: Iterator[list[ExportValues]], names: tuple[str, ...], out: IO[str]) -> int:
    """Write one JSON object per row (``null``, UTF-8 text, ``Infinity``) to the text stream
    ``out``; returns the row count."""
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    count = 0
    for rows in batches:
        out.write("".join(encode(dict(zip(names, row, strict=True))) + "\n" for row in rows))
        count += len(rows)
    return count


def write_parquet(
    batches: Iterator[list[ExportValues]], what: str, out: str | Path | IO[bytes]
) -> int:
    """Write the rows as one Parquet file to ``out`` (a path or binary stream): one typed
    column per table column, in row groups of :data:`BATCH_ROWS` (pyarrow, the parquet extra)."""
    pa = require("pyarrow", "parquet", "mosaic runs export --format parquet")
    pq = require("pyarrow.parquet", "parquet", "mosaic runs export --format parquet")
    table = _table(what)
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in table])
    count = 0
    with pq.ParquetWriter(out, schema) as writer:
        for rows in batches:
            arrays = []
            for i, (name, kind) in enumerate(table):
                values = [row[i] for row in rows]
                try:
                    arrays.append(pa.array(values, type=schema.field(name).type))
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
                    misfits = (
                        (r[1], v) for r, v in zip(rows, values, strict=True) if not _fits(v, kind)
                    )
                    line, value = next(misfits, (rows[0][1], values[0]))
                    raise ExportError(
                        f"line {line} of the run stores {value!r} in {what}.{name}, which is "
                        f"not a {kind} ({exc}); export as csv or jsonl, which keep any value"
                    ) from None
            writer.write_batch(pa.record_batch(arrays, schema=schema))
            count += len(rows)
    return count


def _fits(value: Stored, kind: str) -> bool:
    if value is None:
        return True
    if kind == "int64":
        return isinstance(value, int) and -(2**63) <= value < 2**63
    if kind == "float64":
        return isinstance(value, (int, float))
    return isinstance(value, str)


def _named(agent: str) -> str:
    """An agent id as an error message quotes it: ``repr``, a long one cut."""
    return repr(agent if len(agent) <= 80 else agent[:60] + "...")


def no_such_agent(run_id: str, agent: str, known: Sequence[str]) -> str:
    """The line that refuses ``--agent AGENT`` for a run without it, naming its agents."""
    if not known:
        return (
            f"run {run_id} has no agent {_named(agent)}: its steps and episodes carry no "
            "agent_id (a single-agent run); leave out --agent"
        )
    named = ", ".join(_named(a) for a in known[:AGENTS_NAMED])
    more = f" and {len(known) - AGENTS_NAMED:,} more" if len(known) > AGENTS_NAMED else ""
    return (
        f"run {run_id} has no agent {_named(agent)}; its agents: {named}{more} (give one of "
        "them to --agent)"
    )


def export_run(
    store: RunStore,
    run_id: str,
    *,
    what: str = "steps",
    fmt: str = "csv",
    output: str | Path | IO[bytes] = "-",
    agent: str | None = None,
    metrics: Sequence[str] | None = None,
    include_unfinished: bool = False,
) -> int:
    """Export ``what`` (a key of :data:`TABLES`) of ``run_id`` (an id or unique prefix) as
    ``fmt`` to ``output``: a file path (appears whole or not at all), or a binary stream
    (``"-"``: standard output). ``agent``: only that ``agent_id``'s rows; ``metrics``: only
    the series whose names match one of these globs; ``include_unfinished``: the episodes
    the run's end cut off too (left out otherwise; flagged in the ``unfinished`` column).
    Returns the number of rows written.

    ``metrics`` rows are every point of the run's series, series by series, each by step,
    with ``wall_time`` in float seconds since the epoch (as TensorBoard keeps it), all read in
    one read transaction: a run being written exports every series up to the same write."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if agent is not None and what == "events":
        raise ExportError("events have no agent_id: --agent filters steps, episodes or metrics")
    names = columns(what)
    if fmt == "parquet":  # before a file is opened
        require("pyarrow", "parquet", "mosaic runs export --format parquet")
        require("pyarrow.parquet", "parquet", "mosaic runs export --format parquet")
    full = store.resolve(run_id)
    if agent is not None and not store.has_agent(full, agent):
        # metrics: the agent may have series only (no step or episode rows)
        series_agents = (
            sorted({s.agent_id for s in store.series(full) if s.agent_id is not None})
            if what == "metrics"
            else []
        )
        if agent not in series_agents:
            raise ExportError(no_such_agent(full, agent, series_agents or store.agent_ids(full)))

    def write(stream: IO[bytes]) -> int:
        with store.snapshot():  # ended here, also when writing fails half way
            batches = iter_batches(
                store, full, what, agent, metrics, include_unfinished=include_unfinished
            )
            if fmt == "parquet":
                return write_parquet(batches, what, stream)
            text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=False)
            try:
                return (write_csv if fmt == "csv" else write_jsonl)(batches, names, text)
            finally:
                text.flush()
                text.detach()  # leave the binary stream open: it is the caller's

    if isinstance(output, (str, Path)) and str(output) != "-":
        target = Path(output)
        partial = target.with_name(f".{target.name}.partial")
        try:
            with open(partial, "wb") as stream:
                count = write(stream)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return count
    if isinstance(output, (str, Path)):
        sys.stdout.flush()
        count = write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return count
    return write(output)


__all__ = [
    "BATCH_ROWS",
    "FORMATS",
    "TABLES",
    "ExportError",
    "columns",
    "export_run",
    "format_for",
    "iter_batches",
    "write_csv",
    "write_jsonl",
    "write_parquet",
]
