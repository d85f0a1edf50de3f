"""The reader: classification, upstream shapes, validation, heartbeat and stdout protection."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import pytest

from mosaic_sdk.telemetry import Heartbeat, TelemetryEmitter, classify_line, validate_line
from mosaic_sdk.telemetry.heartbeat import heartbeat_interval


def test_non_json_text_is_log_output_not_an_error() -> None:
    line = classify_line("Loading weights... done\n")
    assert line.kind == "log" and line.error is None and line.text == "Loading weights... done"


@pytest.mark.parametrize("text", ['{"type": "step", ', '{"a": 1', "[1, 2"])
def test_malformed_json_is_invalid_with_a_reason(text: str) -> None:
    line = classify_line(text)
    assert line.kind == "invalid" and "malformed JSON" in (line.error or "")


def test_json_that_is_not_telemetry_is_invalid() -> None:
    assert classify_line("[1, 2]").kind == "invalid"
    line = classify_line('{"hello": "world"}')
    assert line.kind == "invalid" and "without 'type'" in (line.error or "")
    assert classify_line('{"type": "banana"}').error == "unknown telemetry type 'banana'"


def test_upstream_emitter_lifecycle_shape_is_accepted() -> None:
    raw = json.dumps(
        {"event": "run_started", "payload": {"algo": "ppo"}, "run_id": "x", "timestamp": 1.0},
        sort_keys=True,
        separators=(",", ":"),
    )
    line = classify_line(raw)
    assert line.kind == "lifecycle" and line.data["event"] == "run_started"


def test_worker_guide_step_shape_is_accepted_and_normalised() -> None:
    line = classify_line('{"event_type": "step", "run_id": "x", "step_index": 3, "reward": 1.0}')
    assert line.kind == "step" and line.data["type"] == "step" and "event_type" not in line.data
    guide_lifecycle = classify_line('{"event_type": "run_started", "run_id": "x"}')
    assert guide_lifecycle.kind == "lifecycle" and guide_lifecycle.data["event"] == "run_started"


def test_alias_field_names_of_the_proxy_are_normalised() -> None:
    line = classify_line('{"type": "step", "episode": 2, "step": 7}')
    assert line.data["episode_index"] == 2 and line.data["step_index"] == 7
    ep = classify_line('{"type": "episode", "episode": 4}')
    assert ep.data["episode_index"] == 4


def test_bytes_and_bad_utf8_are_handled() -> None:
    assert classify_line(b"\xff\xfe garbage").kind == "log"


def test_validation_names_the_problem() -> None:
    buf = io.StringIO()
    TelemetryEmitter("r", buf, flush_interval=0).step(0, 0, 1.0)
    data = json.loads(buf.getvalue())
    assert validate_line(dict(data)) == []
    bad = dict(data, seq=0)
    assert any(p.startswith("seq") for p in validate_line(bad))
    extra = dict(data, surprise=1)
    assert any("surprise" in p for p in validate_line(extra))
    wrong = dict(data, reward="high")
    assert any(p.startswith("reward") for p in validate_line(wrong))
    upstream_only = {"event": "run_started", "payload": {}, "run_id": "x", "timestamp": 1.0}
    assert validate_line(upstream_only), "upstream lines lack the versioned fields"


def test_heartbeat_thread_emits_at_its_interval_and_stops() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0)
    progress = {"episode": 3, "step": 42}
    with Heartbeat(em, interval=0.05, progress=lambda: progress) as hb:
        deadline = time.monotonic() + 5
        while hb.count < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    count = hb.count
    time.sleep(0.15)
    assert count >= 2 and hb.count == count  # stopped
    beats = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert all(b["event"] == "heartbeat" for b in beats)
    payload = beats[0]["payload"]
    assert payload["episode"] == 3 and payload["step"] == 42
    assert payload["memory_mb"] > 0 and payload["cpu_percent"] >= 0


def test_heartbeat_interval_default_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOSAIC_HEARTBEAT_INTERVAL", raising=False)
    assert heartbeat_interval() == 30.0
    monkeypatch.setenv("MOSAIC_HEARTBEAT_INTERVAL", "0.5")
    assert heartbeat_interval() == 0.5
    monkeypatch.setenv("MOSAIC_HEARTBEAT_INTERVAL", "soon")
    with pytest.raises(ValueError, match="MOSAIC_HEARTBEAT_INTERVAL"):
        heartbeat_interval()


def test_claim_stdout_keeps_library_prints_out_of_the_telemetry_stream() -> None:
    code = (
        "import os\n"
        "from mosaic_sdk.telemetry import TelemetryEmitter\n"
        "from mosaic_sdk.telemetry.stdout import claim_stdout\n"
        "out = claim_stdout()\n"
        "print('library chatter')\n"
        "os.write(1, b'C-level chatter\\n')\n"
        "em = TelemetryEmitter('r', out, flush_interval=0)\n"
        "em.step(0, 0, 1.0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [classify_line(x).kind for x in res.stdout.splitlines()] == ["step"]
    assert "library chatter" in res.stderr and "C-level chatter" in res.stderr


def test_importing_telemetry_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, mosaic_sdk.telemetry\n"
        "heavy = [m for m in ('numpy', 'pydantic', 'pluggy', 'gymnasium') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""


def test_a_step_or_episode_line_whose_agent_id_is_not_a_string_is_invalid() -> None:
    for agent in (5, True, [1, 2], {"a": 1}, 1.5):
        for kind in ("step", "episode"):
            line = classify_line(json.dumps({"type": kind, "episode_index": 0, "agent_id": agent}))
            assert line.kind == "invalid" and "agent_id must be a string" in line.error
    for agent in ("5", None):
        line = classify_line(json.dumps({"type": "step", "episode_index": 0, "agent_id": agent}))
        assert line.kind == "step" and line.data["agent_id"] == agent
