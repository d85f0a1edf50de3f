"""``mosaic runs export``: what other tools read back is exactly what the store holds."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from stored_runs import add_rows, add_run

from mosaic_sdk.cli import main
from mosaic_sdk.runner.storage import export
from mosaic_sdk.runner.storage.export import ExportError, columns, export_run, format_for
from mosaic_sdk.runner.storage.store import RunStore

TS = 1_750_000_000_123_456_789  # more digits than a float64 holds
STEPS = [
    ("r1", 2, 2, 0, 0, 1.0, 0, 0, TS, '{"type": "step", "observation": "é🎉"}'),
    ("r1", 3, 3, 0, 1, None, 1, 0, None, 'a "quoted", comma,\nnewline and\ttab'),
    ("r1", 4, None, None, None, 0.1 + 0.2, None, None, 5, ""),
    ("r1", 5, 5, 0, 2, float("inf"), 0, 1, 7, "ünïcödé ✓ 漢字"),
    ("r1", 6, 6, 1, 0, -1e-300, 0, 0, 8, "null"),
]
EVENTS = [
    ("r1", 1, 1, "run_started", TS, 0, '{"env_id": "CartPole-v1"}', "{}"),
    ("r1", 7, 7, "évènement ☃", None, 0, None, "raw"),
    ("r1", 8, None, "run_failed", 9, 1, "", "synthesised"),
]


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "runs.sqlite"
    add_run(path, "r1", returns=[1.5, None], steps=[3, None])
    add_run(path, "r2", returns=[9.0])
    add_rows(path, "steps", [*STEPS, ("r2", 2, 2, 0, 0, 2.0, 0, 0, 1, "other run")])
    add_rows(path, "events", EVENTS)
    return path


def stored(path, what):
    """The rows as the store holds them, by SQL, as dicts."""
    conn = sqlite3.connect(path)
    try:
        cursor = conn.execute(
            f"SELECT {', '.join(columns(what))} FROM {what} WHERE run_id = 'r1' ORDER BY line_no"
        )
        return [dict(zip(columns(what), row, strict=True)) for row in cursor]
    finally:
        conn.close()


def export_to(store_path, target, what, fmt):
    with RunStore(store_path, readonly=True) as store:
        return export_run(store, "r1", what=what, fmt=fmt, output=target)


@pytest.mark.parametrize("what", ["steps", "episodes", "events"])
def test_jsonl_reads_back_exactly(store_path, tmp_path, what):
    out = tmp_path / f"{what}.jsonl"
    expected = stored(store_path, what)
    assert export_to(store_path, out, what, "jsonl") == len(expected) > 0
    text = out.read_text(encoding="utf-8")
    assert [json.loads(line) for line in text.splitlines()] == expected
    if what == "steps":
        assert "é🎉" in text and "\\u" not in text  # UTF-8, not escapes


@pytest.mark.parametrize("what", ["steps", "episodes", "events"])
def test_csv_reads_back_exactly(store_path, tmp_path, what):
    out = tmp_path / f"{what}.csv"
    expected = stored(store_path, what)
    assert export_to(store_path, out, what, "csv") == len(expected)
    kinds = dict(export.TABLES[what])
    with open(out, encoding="utf-8", newline="") as f:
        header, *rows = list(csv.reader(f))
    assert tuple(header) == columns(what)

    def value(name, text):
        if text == "":
            return None if kinds[name] != "string" else text  # told apart below
        return {"int64": int, "float64": float, "string": str}[kinds[name]](text)

    got = [{n: value(n, v) for n, v in zip(header, row, strict=True)} for row in rows]
    for row in expected:  # NULL text and "" text are apart in the file, see the next test
        for name, v in row.items():
            if v is None and kinds[name] == "string":
                row[name] = ""
    assert got == expected


def test_csv_tells_null_from_the_empty_string(store_path, tmp_path):
    out = tmp_path / "events.csv"
    export_to(store_path, out, "events", "csv")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '"run_id","line_no","seq","event","ts_unix_ns","synthesised",' + (
        '"payload_json","raw"'
    )
    assert lines[2] == '"r1",7,7,"évènement ☃",,0,,"raw"'  # NULLs: empty, unquoted
    assert lines[3] == '"r1",8,,"run_failed",9,1,"","synthesised"'  # "": quoted


def pandas_rows(pd, frame):
    return [
        {k: (None if pd.isna(v) else v) for k, v in row.items()} for row in frame.to_dict("records")
    ]


def test_pandas_reads_the_csv_back_exactly_with_nullable_ints(store_path, tmp_path):
    pd = pytest.importorskip("pandas")
    expected = stored(store_path, "steps")
    export_to(store_path, tmp_path / "s.csv", "steps", "csv")
    ints = {n: "Int64" for n, kind in export.TABLES["steps"] if kind == "int64"}
    frame = pd.read_csv(tmp_path / "s.csv", dtype=ints, keep_default_na=False, na_values=[""])
    assert list(frame.columns) == list(columns("steps"))
    got = pandas_rows(pd, frame)
    for want in expected:
        if want["raw"] == "":
            want["raw"] = None  # pandas reads a quoted "" as NA too (the csv module does not)
    assert got == expected
    assert frame["ts_unix_ns"][0] == TS  # Int64: every digit


def test_pandas_reads_the_jsonl_back(store_path, tmp_path):
    pd = pytest.importorskip("pandas")
    expected = stored(store_path, "steps")
    export_to(store_path, tmp_path / "s.jsonl", "steps", "jsonl")
    frame = pd.read_json(tmp_path / "s.jsonl", lines=True, dtype_backend="numpy_nullable")
    assert list(frame.columns) == list(columns("steps"))
    got = pandas_rows(pd, frame)
    assert [r["raw"] for r in got] == [r["raw"] for r in expected]  # "" stays ""
    assert [r["reward"] for r in got] == [r["reward"] for r in expected]
    # pandas parses the integers of a column with nulls through float64 (its limit, not the
    # file's: json.loads reads every digit, see above): equal to 1 part in 2**52
    assert got[0]["ts_unix_ns"] == pytest.approx(TS, rel=2**-52)
    assert [r["seq"] for r in got] == [r["seq"] for r in expected]


def test_parquet_reads_back_exactly_in_row_groups(store_path, tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(export, "BATCH_ROWS", 2)
    for what in ("steps", "episodes", "events"):
        out = tmp_path / f"{what}.parquet"
        expected = stored(store_path, what)
        assert export_to(store_path, out, what, "parquet") == len(expected)
        assert pq.read_table(out).to_pylist() == expected
        assert pq.ParquetFile(out).metadata.num_row_groups == -(-len(expected) // 2)
    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(tmp_path / "steps.parquet", dtype_backend="numpy_nullable")
    assert pandas_rows(pd, frame) == stored(store_path, "steps")  # every digit, "" kept
    schema = pq.read_schema(tmp_path / "steps.parquet")
    assert str(schema.field("ts_unix_ns").type) == "int64"
    assert str(schema.field("reward").type) == "double"


def test_batches_change_nothing_in_the_output(store_path, tmp_path, monkeypatch):
    export_to(store_path, tmp_path / "one.csv", "steps", "csv")
    export_to(store_path, tmp_path / "one.jsonl", "steps", "jsonl")
    monkeypatch.setattr(export, "BATCH_ROWS", 1)
    with RunStore(store_path, readonly=True) as store:
        assert [len(b) for b in export.iter_batches(store, "r1", "steps")] == [1] * len(STEPS)
    export_to(store_path, tmp_path / "many.csv", "steps", "csv")
    export_to(store_path, tmp_path / "many.jsonl", "steps", "jsonl")
    for suffix in ("csv", "jsonl"):
        one = (tmp_path / f"one.{suffix}").read_bytes()
        assert one == (tmp_path / f"many.{suffix}").read_bytes()


def test_a_value_parquet_cannot_type_is_a_clear_error_and_no_file(store_path, tmp_path):
    pytest.importorskip("pyarrow")
    add_rows(store_path, "steps", [("r1", 9, 2.0**70, 0, 0, 0.0, 0, 0, 1, "x")])
    out = tmp_path / "s.parquet"
    with pytest.raises(ExportError, match=r"line 9 of the run stores .* in steps\.seq, which"):
        export_to(store_path, out, "steps", "parquet")
    assert not out.exists() and not list(tmp_path.glob(".*.partial"))
    export_to(store_path, tmp_path / "s.jsonl", "steps", "jsonl")  # which keeps it
    last = json.loads((tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert last["seq"] == 2.0**70


def test_format_for_a_file_name():
    assert format_for("a.CSV") == "csv" and format_for("a.ndjson") == "jsonl"
    assert format_for("a.pq") == "parquet" and format_for("-") == "csv"
    assert format_for("a.txt", default="jsonl") == "jsonl"


# -- the command line -------------------------------------------------------------------------


def test_cli_writes_a_file_by_its_suffix(store_path, tmp_path, capsys):
    out = tmp_path / "events.jsonl"
    argv = ["runs", "export", "r1", "--what", "events", "-o", str(out)]
    assert main([*argv, "--store", str(store_path)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 3 events rows to {out} (jsonl)"
    assert [json.loads(x) for x in out.read_text("utf-8").splitlines()] == stored(
        store_path, "events"
    )


def test_cli_streams_utf8_to_stdout_whatever_the_locale(store_path):
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LC_ALL": "C"}
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "runs", "export", "r1"]
        + ["--store", str(store_path), "--format", "jsonl"],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert rows == stored(store_path, "steps")


def test_cli_errors_exit_2_and_write_nothing(store_path, tmp_path, capsys):
    out = tmp_path / "x.csv"
    assert main(["runs", "export", "ghost", "-o", str(out), "--store", str(store_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mosaic: error: no run 'ghost' in the store") and err.count("\n") == 1
    with pytest.raises(SystemExit) as exit_:
        main(["runs", "export", "r1", "--format", "xml", "--store", str(store_path)])
    assert exit_.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.csv")) and not list(tmp_path.glob(".*.partial"))


def test_cli_parquet_without_pyarrow_names_the_pip_command(
    store_path, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    out = tmp_path / "x.parquet"
    assert main(["runs", "export", "r1", "-o", str(out), "--store", str(store_path)]) == 2
    err = capsys.readouterr().err
    assert "needs pyarrow" in err and "pip install 'mosaic-worker-sdk[parquet]'" in err
    assert not out.exists()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_long_run_is_streamed_not_loaded(tmp_path, monkeypatch, fmt):
    import tracemalloc

    path = tmp_path / "runs.sqlite"
    add_run(path, "long", returns=[])
    raw = json.dumps({"type": "step", "observation": [0.5] * 32})
    n = 60_000
    add_rows(path, "steps", [("long", i, i, 0, i, 1.0, 0, 0, i, raw) for i in range(2, n + 2)])
    monkeypatch.setattr(export, "BATCH_ROWS", 1000)
    out = tmp_path / f"steps.{fmt}"
    add_run(path, "warm", returns=[])
    add_rows(path, "steps", [("warm", 2, 2, 0, 0, 1.0, 0, 0, 2, raw)])
    with RunStore(path, readonly=True) as store:
        # the first export imports its writer's modules: not what this test measures
        export_run(store, "warm", what="steps", fmt=fmt, output=tmp_path / f"warm.{fmt}")
        tracemalloc.start()
        try:
            assert export_run(store, "long", what="steps", fmt=fmt, output=out) == n
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    if fmt != "parquet":  # pyarrow's buffers are not Python allocations
        assert out.stat().st_size > 10 * 2**20
    assert peak < 4 * 2**20, f"peak {peak / 2**20:.1f} MiB of Python memory"


def test_the_store_reads_rows_only_of_known_tables_and_columns(store_path):
    with RunStore(store_path, readonly=True) as store:
        with pytest.raises(ValueError, match="no table 'runs'"):
            store.row_cursor("r1", "runs", ["run_id"])
        with pytest.raises(ValueError, match=r"no column\(s\) \['x; DROP'\]"):
            store.row_cursor("r1", "steps", ["line_no", "x; DROP"])
        assert [r[0] for r in store.row_cursor("r1", "steps", ["line_no"])] == [2, 3, 4, 5, 6]


def _multi_agent_store(tmp_path):
    path = tmp_path / "agents.sqlite"
    add_run(path, "ma", returns=[])
    add_rows(
        path,
        "steps",
        [
            ("ma", 2, 2, 0, 0, 1.0, 0, 0, 1, "s-a", "a"),
            ("ma", 3, 3, 0, 0, 2.0, 0, 0, 2, "s-b", "b"),
            ("ma", 4, 4, 0, 1, 3.0, 0, 0, 3, "s-a2", "a"),
            ("ma", 5, 5, 0, 1, 4.0, 0, 0, 4, "s-none", None),
        ],
    )
    add_rows(
        path,
        "episodes",
        [
            ("ma", 6, 6, 0, 4.0, 2, 1, 0, 5, "e-a", "a"),
            ("ma", 7, 7, 0, 2.0, 1, 1, 0, 6, "e-b", "b"),
        ],
    )
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_agent_id_is_a_column_and_agent_filters(tmp_path, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    path = _multi_agent_store(tmp_path)

    def read(out):
        if fmt == "jsonl":
            return [json.loads(line) for line in out.read_text().splitlines()]
        if fmt == "csv":
            with open(out, newline="") as f:
                return list(csv.DictReader(f))
        import pyarrow.parquet as pq

        return pq.read_table(out).to_pylist()

    with RunStore(path, readonly=True) as store:
        out = tmp_path / f"all.{fmt}"
        assert export_run(store, "ma", what="steps", fmt=fmt, output=out) == 4
        agents = [r["agent_id"] for r in read(out)]
        assert agents == ["a", "b", "a", "" if fmt == "csv" else None]
        out = tmp_path / f"a.{fmt}"
        assert export_run(store, "ma", what="steps", fmt=fmt, output=out, agent="a") == 2
        assert [r["raw"] for r in read(out)] == ["s-a", "s-a2"]
        out = tmp_path / f"b.{fmt}"
        assert export_run(store, "ma", what="episodes", fmt=fmt, output=out, agent="b") == 1
        assert [(r["raw"], r["agent_id"]) for r in read(out)] == [("e-b", "b")]
        out = tmp_path / f"none.{fmt}"
        with pytest.raises(ExportError, match=r"run ma has no agent 'zz'; its agents: 'a', 'b'"):
            export_run(store, "ma", what="steps", fmt=fmt, output=out, agent="zz")
        assert not out.exists()


def test_agent_filter_on_the_command_line(tmp_path, capsys):
    path = _multi_agent_store(tmp_path)
    out = tmp_path / "b.jsonl"
    args = ["runs", "export", "ma", "--store", str(path), "--agent", "b", "-o", str(out)]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("wrote 1 steps row to ")
    assert [json.loads(line)["raw"] for line in out.read_text().splitlines()] == ["s-b"]
    args = ["runs", "export", "ma", "--store", str(path), "--what", "events", "--agent", "b"]
    assert main(args) == 2
    assert "events have no agent_id" in capsys.readouterr().err


def test_an_agent_the_run_does_not_have_is_refused_naming_the_ones_it_has(tmp_path, capsys):
    # issue 30: --agent nosuch wrote 0 rows with exit 0
    path = _multi_agent_store(tmp_path)
    out = tmp_path / "x.csv"
    for what in ("steps", "episodes"):
        args = ["runs", "export", "ma", "--store", str(path), "--what", what, "--agent", "nosuch"]
        assert main([*args, "-o", str(out)]) == 2
        [line] = capsys.readouterr().err.splitlines()
        assert "run ma has no agent 'nosuch'; its agents: 'a', 'b' (give one of them" in line
        assert not out.exists()
    # an agent with steps but no episodes is one the run has: its episodes are 0 rows
    add_rows(path, "steps", [("ma", 8, 8, 0, 2, 1.0, 0, 0, 7, "s-c", "c")])
    args = ["runs", "export", "ma", "--store", str(path), "--what", "episodes", "--agent", "c"]
    assert main([*args, "-o", str(out)]) == 0
    assert "wrote 0 episodes rows" in capsys.readouterr().out
    many = tmp_path / "many.sqlite"
    add_run(many, "m", returns=[])
    add_rows(
        many, "steps", [("m", i + 2, i, 0, 0, 1.0, 0, 0, i, "s", f"p{i:02d}") for i in range(25)]
    )
    assert main(["runs", "export", "m", "--store", str(many), "--agent", "zz"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "'p00', 'p01'" in line and "'p19' and 5 more" in line and "'p20'" not in line


def test_a_store_without_the_agent_column_exports_null(tmp_path):
    path = tmp_path / "old.sqlite"
    add_run(path, "r", returns=[1.0])
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX episodes_by_agent")
    conn.execute("ALTER TABLE episodes DROP COLUMN agent_id")
    conn.commit()
    conn.close()
    with RunStore(path, readonly=True) as store:
        out = tmp_path / "e.jsonl"
        assert export_run(store, "r", what="episodes", fmt="jsonl", output=out) == 1
        assert json.loads(out.read_text())["agent_id"] is None
        with pytest.raises(ExportError, match="carry no agent_id .a single-agent run.; leave"):
            export_run(store, "r", what="episodes", fmt="jsonl", output=out, agent="a")
