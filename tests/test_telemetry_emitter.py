"""The JSONL emitter: format, upstream field names, seq, numpy, threads, flushing, throttling."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from mosaic_sdk.telemetry import SCHEMA_VERSION, TelemetryEmitter, classify_line, validate_line


def lines_of(buf: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_lifecycle_line_has_the_platform_shape_plus_common_fields() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("run-1", buf, flush_interval=0)
    em.run_started(worker_type="demo", algo="ppo", env_id="CartPole-v1", seed=3, config={"a": 1})
    (line,) = lines_of(buf)
    assert line["event"] == "run_started" and line["run_id"] == "run-1"
    assert isinstance(line["timestamp"], float) and isinstance(line["payload"], dict)
    assert line["payload"] == {
        "worker_type": "demo",
        "algo": "ppo",
        "env_id": "CartPole-v1",
        "seed": 3,
        "config": {"a": 1},
    }
    assert line["type"] == "lifecycle" and line["schema_version"] == SCHEMA_VERSION
    assert line["seq"] == 1 and abs(line["ts_unix_ns"] / 1e9 - line["timestamp"]) < 1e-3
    # compact and sorted, as the platform's emitter writes them
    text = buf.getvalue().strip()
    assert text == json.dumps(line, separators=(",", ":"), sort_keys=True)


PROXY_STEP_FIELDS = {
    "episode_index",
    "step_index",
    "action",
    "observation",
    "reward",
    "terminated",
    "truncated",
    "agent_id",
    "worker_id",
}


def test_step_and_episode_lines_use_the_proxy_field_names() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, worker_id="w1", agent_id="a0", flush_interval=0)
    em.step(2, 5, 1.5, action=1, observation=[0.1, 0.2], terminated=True)
    em.episode(2, 10.0, 6, terminated=True)
    step, episode = lines_of(buf)
    assert step["type"] == "step" and PROXY_STEP_FIELDS <= set(step)
    assert (step["episode_index"], step["step_index"], step["reward"]) == (2, 5, 1.5)
    assert step["agent_id"] == "a0" and step["worker_id"] == "w1"
    assert episode["type"] == "episode"
    assert {
        "episode_index",
        "total_reward",
        "steps",
        "terminated",
        "truncated",
        "agent_id",
        "worker_id",
        "ts_unix_ns",
    } <= set(episode)
    for raw in buf.getvalue().splitlines():
        assert raw == json.dumps(json.loads(raw), separators=(",", ":"), sort_keys=True)


def test_numpy_values_serialise() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0)
    em.step(
        np.int64(0),
        np.int32(1),
        np.float32(0.5),
        action=np.int64(2),
        observation=np.arange(4, dtype=np.float32).reshape(2, 2),
    )
    em.lifecycle("heartbeat", {"vec": np.ones(2), "n": np.int16(3), "flag": np.bool_(True)})
    step, beat = lines_of(buf)
    assert step["observation"] == [[0.0, 1.0], [2.0, 3.0]] and step["action"] == 2
    assert beat["payload"] == {"vec": [1.0, 1.0], "n": 3, "flag": True}


def test_every_line_kind_validates_against_the_schema() -> None:
    import jsonschema

    from mosaic_sdk.telemetry.models import json_schema

    validator = jsonschema.Draft202012Validator(json_schema())
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, worker_id="w", agent_id="a", flush_interval=0)
    em.run_started(worker_type="demo")
    em.step(
        0,
        0,
        1.0,
        action=[0.1],
        observation={"x": 1},
        metadata={"k": 1},
        render_payload={"rgb": [[[0, 0, 0]]]},
        frame_ref="f1",
        episode_seed=4,
    )
    em.step(0, 1, float("nan"))
    em.episode(0, 1.0, 1, truncated=True, metadata={"m": 2}, episode_seed=4)
    em.heartbeat(episode=0, step=1, memory_mb=1.0, cpu_percent=2.0)
    em.checkpoint_saved(checkpoint_path="c.pt", episode=0, step=1)
    em.checkpoint_loaded(checkpoint_path="c.pt")
    em.run_failed(error="boom", error_type="RuntimeError")
    em.run_cancelled(reason="SIGTERM", completed_episodes=0)
    em.run_completed(episodes=1, total_reward=1.0, duration_seconds=0.1)
    raw_lines = buf.getvalue().splitlines()
    assert len(raw_lines) == 10
    for raw in raw_lines:
        obj = json.loads(raw)
        if obj.get("reward") != obj.get("reward"):  # NaN is not JSON Schema "number"-checkable
            obj["reward"] = 0.0
        validator.validate(obj)
        assert validate_line(classify_line(raw).data) == []


def test_schema_file_is_up_to_date() -> None:
    from pathlib import Path

    from mosaic_sdk.telemetry.models import render_schema

    path = Path(__file__).resolve().parents[1] / "schema" / "telemetry.schema.json"
    assert path.read_text() == render_schema(), (
        "schema/telemetry.schema.json is stale: run "
        "`python -m mosaic_sdk.telemetry.models > schema/telemetry.schema.json`"
    )


def test_seq_is_strictly_increasing_across_threads() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0.005)

    def work(k: int) -> None:
        for i in range(500):
            em.step(k, i, 0.0)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    em.close()
    seqs = [line["seq"] for line in lines_of(buf)]
    assert seqs == list(range(1, 2001))


def test_step_throttling_every_nth_keeps_episode_ends() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, step_every=10, flush_interval=0)
    for i in range(25):
        em.step(0, i, 1.0, terminated=(i == 24))
    kept = [line["step_index"] for line in lines_of(buf)]
    assert kept == [0, 10, 20, 24]
    assert em.stats()["steps_dropped"] == 21 and em.stats()["steps_seen"] == 25


def test_step_throttling_by_rate() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, max_step_rate=100.0, flush_interval=0)
    for i in range(1000):  # emitted in far less than a second
        em.step(0, i, 0.0)
    kept = len(buf.getvalue().splitlines())
    assert 1 <= kept <= 150
    assert em.step(0, 1000, 0.0, force=True)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        TelemetryEmitter("", io.StringIO())
    with pytest.raises(ValueError):
        TelemetryEmitter("r", io.StringIO(), step_every=0)
    with pytest.raises(ValueError):
        TelemetryEmitter("r", io.StringIO(), max_step_rate=0)
    em = TelemetryEmitter("r", io.StringIO())
    em.close()
    with pytest.raises(RuntimeError):
        em.step(0, 0, 0.0)


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


def test_batched_lines_reach_the_stream_within_the_flush_interval() -> None:
    stream = CountingStream()
    em = TelemetryEmitter("r", stream, flush_interval=0.05)
    em.step(0, 0, 1.0)
    assert stream.getvalue() == ""  # batched, not yet written
    deadline = time.monotonic() + 5
    while stream.getvalue() == "" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.getvalue().count("\n") == 1  # written by the flusher thread, no close()
    em.lifecycle("heartbeat", {})
    assert stream.getvalue().count("\n") == 2  # lifecycle lines are written at once
    em.close()


def test_lines_reach_a_pipe_before_the_worker_exits(tmp_path) -> None:
    """A child emits one step then sleeps; the parent must read it while the child lives."""
    code = (
        "import time\n"
        "from mosaic_sdk.telemetry import TelemetryEmitter\n"
        "em = TelemetryEmitter('r')\n"
        "em.step(0, 0, 1.0)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert proc.poll() is None, "the line arrived only when the worker exited"
        assert json.loads(line)["type"] == "step"
    finally:
        proc.kill()
        proc.wait()


def test_close_flushes_and_atexit_flushes(tmp_path) -> None:
    code = (
        "from mosaic_sdk.telemetry import TelemetryEmitter\n"
        "em = TelemetryEmitter('r', flush_interval=60)\n"
        "for i in range(100): em.step(0, i, 1.0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert len(out.stdout.splitlines()) == 100


def test_a_closed_pipe_does_not_crash_the_worker() -> None:
    r, w = os.pipe()
    os.close(r)
    stream = os.fdopen(w, "w")
    em = TelemetryEmitter("r", stream, flush_interval=0)
    em.step(0, 0, 1.0)  # EPIPE: recorded, not raised
    assert em.broken
    em.step(0, 1, 1.0)
    em.close()


def deployed_proxy_forwards(raw: str) -> bool:
    """The platform's telemetry proxy, as UPSTREAM.md describes it: non-JSON lines are
    skipped, and only objects whose "type" is "step" or "episode" are forwarded."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("type") in ("step", "episode")


def test_the_deployed_proxy_forwards_our_steps_and_episodes() -> None:
    """Upstream defect: lines written the way the worker guide says (``event_type``) were
    dropped by the proxy. Ours carry ``type`` and are forwarded."""
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0)
    em.step(0, 0, 1.0)
    em.episode(0, 1.0, 1, terminated=True)
    assert all(deployed_proxy_forwards(x) for x in buf.getvalue().splitlines())
    guide_style = json.dumps({"event_type": "step", "run_id": "r", "step_index": 0})
    assert not deployed_proxy_forwards(guide_style)  # the old behaviour this fixes


def test_lifecycle_lines_carry_version_seq_and_ns_time() -> None:
    """Upstream defect: lifecycle lines had no schema version, sequence or ns timestamp."""
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0)
    em.heartbeat(step=1)
    em.run_completed(episodes=0, total_reward=0.0, duration_seconds=0.0)
    a, b = lines_of(buf)
    assert a["schema_version"] == b["schema_version"] == SCHEMA_VERSION
    assert (a["seq"], b["seq"]) == (1, 2)
    assert b["ts_unix_ns"] >= a["ts_unix_ns"] > 10**18


def test_metrics_writes_one_valid_lifecycle_line_with_step_values_and_agent() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter(run_id="r1", stream=buf, flush_interval=0)
    em.metrics({"losses/value": 0.25, "charts/sps": 1200, "nan": float("nan")}, step=np.int64(64))
    em.metrics({"loss": 1.5}, step=3, agent_id="player_1")
    em.close()
    lines = [json.loads(text) for text in buf.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["metrics", "metrics"]
    assert all(line["type"] == "lifecycle" for line in lines)
    first, second = (line["payload"] for line in lines)
    assert first["step"] == 64 and type(first["step"]) is int
    assert first["values"]["losses/value"] == 0.25 and first["values"]["charts/sps"] == 1200
    assert first["values"]["nan"] != first["values"]["nan"]  # NaN kept as NaN
    assert "agent_id" not in first
    assert second == {"step": 3, "values": {"loss": 1.5}, "agent_id": "player_1"}
    for text in buf.getvalue().splitlines():
        assert validate_line(json.loads(text)) == []


def test_metrics_refuses_a_negative_step_a_non_mapping_and_a_bad_agent() -> None:
    em = TelemetryEmitter(run_id="r1", stream=io.StringIO())
    with pytest.raises(ValueError, match="step >= 0"):
        em.metrics({"a": 1.0}, step=-1)
    with pytest.raises(TypeError, match="mapping"):
        em.metrics([1.0], step=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="agent_id"):
        em.metrics({"a": 1.0}, step=0, agent_id="")
