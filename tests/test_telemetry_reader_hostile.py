"""classify_line never raises, whatever a worker writes: deep nesting, any bytes, any text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mosaic_sdk.telemetry import classify_line
from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH, json_depth_exceeds

KINDS = {"lifecycle", "step", "episode", "log", "invalid"}


@pytest.mark.parametrize("opener", ["[", '{"a":'])
@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deep_nesting_is_an_invalid_line_not_an_exception(opener: str, depth: int) -> None:
    text = opener * depth
    for raw in (text, text.encode()):
        line = classify_line(raw)
        assert line.kind == "invalid"
        assert line.text == text
        assert "nested deeper than" in (line.error or "")


def test_deep_but_complete_json_is_invalid_with_its_depth() -> None:
    text = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    line = classify_line(text)
    assert line.kind == "invalid" and f"nested deeper than {MAX_JSON_DEPTH}" in line.error


def test_telemetry_at_the_depth_limit_is_still_telemetry() -> None:
    payload: object = 1
    for _ in range(MAX_JSON_DEPTH - 2):  # the line object and "payload" are two levels
        payload = [payload]
    line = classify_line(json.dumps({"type": "lifecycle", "event": "x", "payload": payload}))
    assert line.kind == "lifecycle", line.error


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    text = json.dumps({"type": "lifecycle", "event": "x", "payload": {"s": "[" * 5000}})
    assert classify_line(text).kind == "lifecycle"


def test_json_depth_exceeds() -> None:
    assert not json_depth_exceeds({"a": [1, {"b": []}]}, 4)  # dict, list, dict, list
    assert json_depth_exceeds({"a": [1, {"b": []}]}, 3)
    assert not json_depth_exceeds(5, 0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_classify(raw: bytes) -> None:
    line = classify_line(raw)
    assert line.kind in KINDS


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(0, 3000))
def test_any_json_value_at_any_depth_classifies(value: object, depth: int) -> None:
    text = "[" * depth + json.dumps(value) + "]" * depth
    line = classify_line(text)
    assert line.kind in KINDS
    assert line.text == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=200))
def test_any_text_classifies(text: str) -> None:
    assert classify_line(text).kind in KINDS
