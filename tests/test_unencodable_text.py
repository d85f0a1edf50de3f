"""Text no UTF-8 stream can carry (lone surrogates) never stops a worker's telemetry.

A file name from ``os.listdir`` on a non-UTF-8 disk, or a command id sent as ``"\\ud800"``,
is a ``str`` holding a lone surrogate. Written as it is, a strict UTF-8 stream raises
``UnicodeEncodeError``; before this fix the emitter took that for a closed stream and dropped
every later line (``run_completed`` included). Now such characters go out as JSON ``\\uXXXX``
escapes, which read back to the very same string, and the control relay refuses them before they
reach a worker.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mosaic_sdk.analytics import AnalyticsManifest, read_analytics, write_analytics
from mosaic_sdk.runner.control.control_relay import ControlRelay
from mosaic_sdk.telemetry import TelemetryEmitter
from mosaic_sdk.telemetry.encoding import lone_surrogate_at
from mosaic_sdk.telemetry.output import json_escape_unencodable

# Every code point, surrogates included (hypothesis leaves category Cs out by default).
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
ANY_TEXT = st.text(alphabet=ANY_CHAR, max_size=12)
# What os.fsdecode makes of arbitrary bytes on a UTF-8 system: undecodable bytes -> \udcXX.
FILE_NAMES = st.binary(max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape"))
STRINGS = ANY_TEXT | FILE_NAMES
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | STRINGS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
    max_leaves=8,
)


def strict_stream(
    encoding: str = "utf-8", errors: str = "strict"
) -> tuple[io.BytesIO, io.TextIOWrapper]:
    """A text stream that refuses what it cannot encode, as a worker's stdout does (or, with
    ``errors``, one that writes it some other way, as stdout under a C.UTF-8 locale does)."""
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline="\n")


def emit_all(stream: io.TextIOWrapper, value: Any, text: str) -> TelemetryEmitter:
    em = TelemetryEmitter("r1", stream, flush_interval=0)
    em.run_started(worker_type="w", env_id="E", seed=1, config={"value": value, text: text})
    em.step(0, 0, 1.0, action=text, observation=value)
    em.episode(0, total_reward=1.0, steps=1, terminated=True, metadata={"note": text})
    em.control_reply({"v": 1, "id": text, "cmd": "ping", "ok": True})
    em.run_completed(episodes=1, total_reward=1.0, duration_seconds=0.1)
    em.flush()
    return em


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=JSON_VALUES,
    text=STRINGS,
    encoding=st.sampled_from(["utf-8", "ascii", "latin-1"]),
    errors=st.sampled_from(["strict", "surrogateescape", "backslashreplace", "replace"]),
)
def test_every_line_arrives_and_reads_back_the_same_text(
    value: Any, text: str, encoding: str, errors: str
) -> None:
    raw, stream = strict_stream(encoding, errors)
    em = emit_all(stream, value, text)
    assert not em.broken
    lines = [json.loads(line) for line in raw.getvalue().decode(encoding).split("\n")[:-1]]
    kinds = [line.get("event") or line["type"] for line in lines]
    assert kinds == ["run_started", "step", "episode", "control_reply", "run_completed"]
    assert lines[0]["payload"]["config"] == {"value": value, text: text}
    assert lines[1]["action"] == text and lines[1].get("observation") == value
    assert lines[2]["metadata"]["note"] == text
    assert lines[3]["id"] == text


def test_a_lone_surrogate_is_said_once_on_stderr_and_the_stream_goes_on(capsys) -> None:
    raw, stream = strict_stream()
    em = TelemetryEmitter("r1", stream, flush_interval=0)
    for i in range(3):
        em.lifecycle("heartbeat", {"path": f"/data/\udcff{i}.bin"})
    em.run_completed(episodes=0, total_reward=0.0, duration_seconds=0.0)
    lines = raw.getvalue().decode("utf-8").split("\n")[:-1]
    assert len(lines) == 4 and "\\udcff" in lines[0]
    assert json.loads(lines[2])["payload"]["path"] == "/data/\udcff2.bin"
    assert not em.broken and em.escaped == 3
    assert capsys.readouterr().err.count("cannot encode") == 1


def test_a_worker_on_a_c_utf8_locale_writes_utf8_and_the_same_name_arrives(tmp_path: Path) -> None:
    """The hostile pass of issue 24: stdout under a C or C.UTF-8 locale has
    ``errors="surrogateescape"``, so an emitter on the default stream wrote ``"\\udcff"`` as the
    raw byte 0xff: a line that is not UTF-8 (a strict reader fails on it; the runner and the
    platform read U+FFFD instead of the name), and nothing said so."""
    code = (
        "import sys; from mosaic_sdk.telemetry import TelemetryEmitter\n"
        "assert sys.stdout.errors == 'surrogateescape', sys.stdout.errors\n"
        "em = TelemetryEmitter('r1')\n"
        "em.run_started(worker_type='w', config={'path': '/data/\\udcff.bin'})\n"
        "em.step(0, 0, 1.0, action='/data/\\udcff.bin')\n"
        "em.run_completed(episodes=0, total_reward=0.0, duration_seconds=0.0)\n"
    )
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    for name in ("PYTHONIOENCODING", "PYTHONUTF8"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    lines = [json.loads(line) for line in proc.stdout.decode("utf-8").split("\n")[:-1]]
    assert lines[0]["payload"]["config"]["path"] == "/data/\udcff.bin"
    assert lines[1]["action"] == "/data/\udcff.bin"
    assert lines[2]["event"] == "run_completed"
    assert proc.stderr.decode().count("cannot encode") == 1


def test_escaping_writes_json_escapes_a_json_reader_takes_back() -> None:
    text = '{"a":"x\ud800y\U0001f600"}'
    assert json_escape_unencodable(text, "utf-8") == '{"a":"x\\ud800y\U0001f600"}'
    assert json_escape_unencodable(text, "ascii") == '{"a":"x\\ud800y\\ud83d\\ude00"}'
    assert json.loads(json_escape_unencodable(text, "ascii")) == json.loads(text)


def test_a_worker_sent_a_surrogate_id_answers_it_and_completes(tmp_path: Path) -> None:
    """The example worker, commanded straight on stdin (as any relay may do), keeps writing."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"run_id": "sur", "episodes": 2, "seed": 1}))
    env = {**os.environ, "MOSAIC_RUN_ID": "sur", "MOSAIC_RUN_DIR": str(tmp_path)}
    env.pop("PYTHONIOENCODING", None)
    proc = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(config)],
        input=b'{"v": 1, "id": "\\ud800", "cmd": "ping"}\n{"v": 1, "id": "next", "cmd": "ping"}\n',
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    lines = [json.loads(line) for line in proc.stdout.decode("utf-8").split("\n")[:-1]]
    replies = [line for line in lines if line.get("type") == "control_reply"]
    # The worker refuses the id (not text) and says so under that very id; the next command
    # is answered as usual.
    assert [r["id"] for r in replies] == ["\ud800", "next"]
    assert replies[0]["ok"] is False and "unicode" in replies[0]["error"]["message"]
    assert replies[1]["ok"] is True
    assert [line.get("event") for line in lines if line.get("type") == "lifecycle"][-1] == (
        "run_completed"
    )
    assert sum(line.get("type") == "episode" for line in lines) == 2
    assert b"output lost" not in proc.stderr


class RecordingStdin:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write_line(self, line: bytes) -> None:
        self.lines.append(line)


@settings(max_examples=200, deadline=None)
@given(rid=STRINGS, extra=JSON_VALUES)
def test_the_relay_never_sends_a_worker_text_it_cannot_read(rid: str, extra: Any) -> None:
    relay = ControlRelay("w", 1, reply_timeout=0.001)
    stdin = RecordingStdin()
    relay.attach(stdin)  # type: ignore[arg-type]
    request = {"cmd": "ping", "id": rid or "x", "extra": extra}
    reply = relay.request(request)
    bad = lone_surrogate_at(request) is not None
    if bad:
        assert stdin.lines == []
        assert reply["error"]["code"] == "malformed_request"
        assert "not valid Unicode" in reply["error"]["message"]
        json.dumps(reply).encode("utf-8")  # the refusal itself travels
    for line in stdin.lines:
        line.decode("utf-8")  # strict: what reaches a worker is UTF-8 text
        assert lone_surrogate_at(json.loads(line)) is None


def test_the_relay_refuses_the_surrogate_ping_of_the_hostile_pass() -> None:
    relay = ControlRelay("w", 1, reply_timeout=0.001)
    stdin = RecordingStdin()
    relay.attach(stdin)  # type: ignore[arg-type]
    reply = relay.request(json.loads('{"cmd": "ping", "id": "\\ud800"}'))
    assert stdin.lines == [] and reply["error"]["code"] == "malformed_request"
    assert reply["id"] is None and reply["cmd"] == "ping"
    assert "$.id" in reply["error"]["message"]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=STRINGS, paths=st.lists(STRINGS, max_size=3))
def test_the_analytics_writer_keeps_any_text(tmp_path: Path, text: str, paths: list[str]) -> None:
    manifest = AnalyticsManifest(
        run_id="r",
        worker_type=text or "w",
        status="completed",
        episodes=1,
        steps=1,
        duration_seconds=0.1,
        env_id=text,
        tensorboard_dirs=paths,
    )
    write_analytics(tmp_path, manifest)
    back = read_analytics(tmp_path)
    assert back.env_id == text and back.tensorboard_dirs == paths


def test_lone_surrogate_at_names_the_place() -> None:
    assert lone_surrogate_at({"a": ["ok", {"b": "x\udcff"}]}) == "$.a[1].b"
    assert lone_surrogate_at({"\ud800": 1}) == "$ (a key)"
    assert lone_surrogate_at({"a": "é😀", "b": [1, None, 2.5]}) is None
