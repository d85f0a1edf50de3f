"""The ingest's fast path (one msgspec parse of a step or metrics line into the fields it
reads) against classify_line (json.loads of the whole line), on generated lines: the same
kind, the same row values, the same event, series and points, for any JSON around them."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest
from mosaic_sdk.telemetry import classify_line

#: Scalars JSON parsers are known to disagree on (as Python values; json.dumps writes NaN,
#: Infinity, big integers and lone surrogates as json.loads reads them back).
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63 - 2, max_value=2**70),
    st.floats(),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "a\udcffb", "\u00e9\n", "\x00"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = ("seq", "reward", "terminated", "truncated", "ts_unix_ns", "agent_id", "payload")


def _line(
    kind: dict[str, object], fields: dict[str, object], extra: dict[str, object], ascii: bool
) -> str:
    line = {**extra, **fields, **kind}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=ascii)


STEP = st.builds(
    _line,
    st.fixed_dictionaries({"type": st.just("step"), "episode_index": VALUES, "step_index": VALUES}),
    st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=4),
    st.dictionaries(st.text(max_size=5), VALUES, max_size=3),
    st.booleans(),
)
METRICS_PAYLOAD = st.one_of(
    VALUES,
    st.fixed_dictionaries(
        {"step": VALUES, "values": st.dictionaries(st.text(max_size=4), VALUES, max_size=3)},
        optional={"agent_id": VALUES},
    ),
)
METRICS = st.builds(
    _line,
    st.fixed_dictionaries(
        {"type": st.just("lifecycle"), "event": st.just("metrics"), "payload": METRICS_PAYLOAD}
    ),
    st.dictionaries(st.sampled_from(["seq", "ts_unix_ns", "agent_id"]), VALUES, max_size=2),
    st.dictionaries(st.text(max_size=5), VALUES, max_size=3),
    st.booleans(),
)


def _read(text: str) -> tuple[str, tuple[object, ...], LineBatch, LineIngest]:
    ingest = LineIngest("r")
    batch = LineBatch()
    ingest.add(batch, [text.encode("utf-8", "surrogatepass")])
    for kind, rows in (("step", batch.steps), ("lifecycle", batch.events), ("", batch.logs)):
        if rows:
            return kind or batch.logs[0][3], rows[0], batch, ingest
    raise AssertionError(f"line not stored: {text!r}")


@settings(max_examples=200, deadline=None)
@given(STEP)
def test_step_lines_read_as_classify_line_reads_them(text: str) -> None:
    kind, row, _, _ = _read(text)
    item = classify_line(text.encode("utf-8", "surrogatepass"))
    assert kind == item.kind, text
    if kind == "step":
        d = item.data
        keys = ("seq", "episode_index", "step_index", "reward", "terminated", "truncated")
        want = (*(d.get(k) for k in keys), d.get("ts_unix_ns"), item.text, d.get("agent_id"))
        assert repr(row[2:11]) == repr(want), text  # repr: NaN == NaN, -0.0 != 0.0


@settings(max_examples=200, deadline=None)
@given(METRICS)
def test_metrics_lines_read_as_classify_line_reads_them(text: str) -> None:
    """The fast path's reading equals the one of the same line with a leading blank (which
    classify_line reads: the fast path only takes a line that starts with '{')."""
    got = []
    for line in (text, " " + text):
        kind, row, batch, ingest = _read(line)
        values = row[:7] if kind == "lifecycle" else row[:6]  # (a log row's text is the line)
        # (a point's wall time is the time read when the line has no integer ts_unix_ns)
        points = repr([(*p[:3], *p[4:]) for p in batch.points])
        got.append((kind, values, batch.series, points, batch.refused, ingest.events))
    assert got[0] == got[1], text
    assert got[0][0] == classify_line(text.encode("utf-8", "surrogatepass")).kind
