"""The wire of the control protocol: parsing, error replies, the schema and the models agree."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from mosaic_sdk.control.protocol import (
    COMMANDS,
    ProtocolError,
    Reply,
    decode_line,
    error_reply,
    json_schema,
    ok_reply,
    parse_command,
    render_schema,
    validate_reply,
)
from mosaic_sdk.telemetry import TelemetryEmitter, classify_line, validate_line

ROOT = Path(__file__).resolve().parents[2]
VALID_COMMANDS = [
    {"v": 1, "id": "1", "cmd": "ping"},
    {"v": 1, "id": "2", "cmd": "pause"},
    {"v": 1, "id": "3", "cmd": "resume"},
    {"v": 1, "id": "4", "cmd": "stop"},
    {"v": 1, "id": "5", "cmd": "checkpoint"},
    {"v": 1, "id": "6", "cmd": "reset", "seed": 7},
    {"v": 1, "id": "7", "cmd": "reset"},
    {"v": 1, "id": "8", "cmd": "step"},
    {"v": 1, "id": "9", "cmd": "step", "action": [0.5, -1.0]},
    {"v": 1, "id": "a", "cmd": "act", "observation": [0.0, 1.0]},
    {"v": 1, "id": "b", "cmd": "close"},
]
INVALID_COMMANDS = [
    ({"v": 2, "id": "1", "cmd": "ping"}, "unsupported_version"),
    ({"v": 1, "id": "1", "cmd": "dance"}, "unknown_command"),
    ({"v": 1, "id": "1"}, "unknown_command"),
    ({"v": 1, "cmd": "ping"}, "invalid_arguments"),
    ({"v": 1, "id": "", "cmd": "ping"}, "invalid_arguments"),
    ({"v": 1, "id": "1", "cmd": "ping", "extra": 1}, "invalid_arguments"),
    ({"v": 1, "id": "1", "cmd": "reset", "seed": "3"}, "invalid_arguments"),
    ({"v": 1, "id": "1", "cmd": "reset", "seed": -1}, "invalid_arguments"),
    ({"v": 1, "id": "1", "cmd": "act"}, "invalid_arguments"),
    ({"v": 1, "id": 5, "cmd": "ping"}, "invalid_arguments"),
]


def test_the_schema_file_is_up_to_date() -> None:
    path = ROOT / "schema" / "control.schema.json"
    assert path.read_text() == render_schema(), (
        "schema/control.schema.json is stale: run "
        "`python -m mosaic_sdk.control.protocol > schema/control.schema.json`"
    )


@pytest.mark.parametrize("command", VALID_COMMANDS, ids=lambda c: f"{c['cmd']}-{c['id']}")
def test_valid_commands_pass_the_models_and_the_schema(command: dict) -> None:
    assert parse_command(command).cmd == command["cmd"]
    jsonschema.Draft202012Validator(json_schema()).validate(command)


@pytest.mark.parametrize(("command", "code"), INVALID_COMMANDS)
def test_invalid_commands_fail_the_models_and_the_schema(command: dict, code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_command(command)
    assert info.value.code == code and info.value.message and info.value.hint
    validator = jsonschema.Draft202012Validator(json_schema())
    command_schema = {**json_schema(), "anyOf": [{"$ref": "#/$defs/Command"}]}
    assert not jsonschema.Draft202012Validator(command_schema).is_valid(command)
    # the error reply itself is a valid reply
    validator.validate({"type": "control_reply", **info.value.reply()})


def test_every_command_of_the_schema_is_a_model_and_back() -> None:
    schema_commands = {
        d["properties"]["cmd"]["const"]
        for name, d in json_schema()["$defs"].items()
        if "cmd" in d.get("properties", {}) and "const" in d["properties"]["cmd"]
    }
    assert schema_commands == set(COMMANDS)


def test_error_replies_keep_the_id_and_name_when_readable() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_command({"v": 1, "id": "x9", "cmd": "reset", "seed": "one"})
    reply = validate_reply({"type": "control_reply", **info.value.reply()})
    assert (reply.id, reply.cmd, reply.ok) == ("x9", "reset", False)
    assert reply.error is not None and "seed" in reply.error.message


@pytest.mark.parametrize("text", ['{"v": 1, "id": "1"', "ping", "[1, 2]", '"ping"', "[" * 5000])
def test_malformed_lines_are_malformed_json(text: str) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_line(text)
    assert info.value.code == "malformed_json" and info.value.id is None


def test_replies_are_telemetry_lines_of_their_own_type() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r1", buf, worker_id="w", flush_interval=0)
    em.run_started(worker_type="demo")
    em.control_reply(ok_reply("1", "step", step_index=3, reward=1, episode_done=False))
    em.control_reply(error_reply(None, None, "malformed_json", "not JSON", "send JSON"))
    em.lifecycle("paused", {"command_id": "2"})
    lines = buf.getvalue().splitlines()
    validator = jsonschema.Draft202012Validator(
        json.loads((ROOT / "schema" / "telemetry.schema.json").read_text())
    )
    for raw in lines:
        item = classify_line(raw)
        assert item.is_telemetry, raw
        assert validate_line(item.data) == []
        validator.validate(json.loads(raw))
    reply = json.loads(lines[1])
    assert reply["type"] == "control_reply" and reply["seq"] == 2 and reply["worker_id"] == "w"
    assert list(reply) == sorted(reply)  # keys sorted, as every telemetry line
    assert Reply.model_validate({k: reply[k] for k in reply if k in Reply.model_fields}).ok


def test_a_version_1_line_stays_valid_and_a_reply_needs_version_2() -> None:
    old = {"type": "episode", "run_id": "r", "schema_version": 1, "seq": 1, "ts_unix_ns": 1}
    old.update(episode_index=0, total_reward=1.0, steps=1, terminated=True, truncated=False)
    assert validate_line(old) == []
    reply = {"type": "control_reply", "run_id": "r", "schema_version": 1, "seq": 1}
    reply.update(ts_unix_ns=1, v=1, id="1", cmd="ping", ok=True)
    assert any("schema_version" in p for p in validate_line(reply))
