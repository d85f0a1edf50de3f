"""The trainer daemon's messages on the wire, checked against the platform's own ``.proto``.

``mosaic_sdk.submit.protocol`` builds the messages of the platform's ``TrainerService`` from a
table of its own; the daemon double of ``test_submit.py`` speaks them through that same module,
so a wrong field number there is agreed on by both ends and no end-to-end test sees it. Here the
platform's field numbers and types are written out by hand from its
``gym_gui/services/trainer/proto/trainer.proto`` (package ``gymgui.trainer``), and every field
of every message the SDK builds or reads is encoded and decoded through the SDK, the bytes
walked by a reader written below, not by protobuf's descriptors.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytest.importorskip("grpc")

from mosaic_sdk.submit import protocol  # noqa: E402
from mosaic_sdk.submit.dispatch import TRAIN_RUN_SCHEMA  # noqa: E402
from tests.submit.daemon_double import DaemonDouble  # noqa: E402
from tests.submit.test_submit import SMALL, submit  # noqa: E402

# Wire types (protobuf encoding): varint, fixed 64-bit, length-delimited, fixed 32-bit.
VARINT, I64, LEN, I32 = 0, 1, 2, 5

# -- the platform's messages, from trainer.proto ---------------------------------------------------
#: ``{message: {field: (number, type, label)}}`` for each message of the service the SDK uses;
#: label "" (proto3 implicit presence), "optional" or "repeated".
PLATFORM: dict[str, dict[str, tuple[int, str, str]]] = {
    "SubmitRunRequest": {"run_id": (1, "string", ""), "config_json": (2, "string", "")},
    "SubmitRunResponse": {"run_id": (1, "string", ""), "digest": (2, "string", "")},
    "CancelRunRequest": {"run_id": (1, "string", "")},
    "CancelRunResponse": {},
    "RunRecord": {
        "run_id": (1, "string", ""),
        "status": (2, "RunStatus", ""),
        "digest": (3, "string", ""),
        "created_at": (4, "Timestamp", ""),
        "updated_at": (5, "Timestamp", ""),
        "last_heartbeat": (6, "Timestamp", ""),
        "gpu_slot": (7, "int32", "optional"),
        "failure_reason": (8, "string", "optional"),
        "gpu_slots": (9, "int32", "repeated"),
        "seq_id": (10, "uint64", ""),
    },
    "ListRunsRequest": {"status_filter": (1, "RunStatus", "repeated")},
    "ListRunsResponse": {"runs": (1, "RunRecord", "repeated")},
    "WatchRunsRequest": {
        "status_filter": (1, "RunStatus", "repeated"),
        "since_seq": (2, "uint64", ""),
    },
    "HealthCheckRequest": {},
    "HealthCheckResponse": {
        "pid": (1, "uint64", ""),
        "started_at": (2, "Timestamp", ""),
        "listen_address": (3, "string", ""),
        "healthy": (4, "bool", ""),
    },
    "StreamEpisodesRequest": {"run_id": (1, "string", ""), "since_seq": (2, "uint64", "")},
    "RunEpisode": {
        "run_id": (1, "string", ""),
        "episode_index": (2, "uint64", ""),
        "total_reward": (3, "double", ""),
        "steps": (4, "uint64", ""),
        "terminated": (5, "bool", ""),
        "truncated": (6, "bool", ""),
        "metadata_json": (7, "string", ""),
        "timestamp": (8, "Timestamp", ""),
        "seq_id": (9, "uint64", ""),
        "agent_id": (10, "string", ""),
        "worker_id": (11, "string", ""),
    },
}

#: ``enum RunStatus``.
RUN_STATUS = {"UNSPECIFIED": 0, "INIT": 1, "HSHK": 2, "RDY": 3, "EXEC": 4, "PAUSE": 5}
RUN_STATUS |= {"FAULT": 6, "TERM": 7}

#: ``service TrainerService``: the methods the SDK calls, (request, response, server streams).
SERVICE_METHODS = {
    "SubmitRun": ("SubmitRunRequest", "SubmitRunResponse", False),
    "CancelRun": ("CancelRunRequest", "CancelRunResponse", False),
    "ListRuns": ("ListRunsRequest", "ListRunsResponse", False),
    "WatchRuns": ("WatchRunsRequest", "RunRecord", True),
    "GetHealth": ("HealthCheckRequest", "HealthCheckResponse", False),
    "StreamRunEpisodes": ("StreamEpisodesRequest", "RunEpisode", True),
}


# -- a reader of the wire format, independent of protobuf's ----------------------------------------
def varint(value: int) -> bytes:
    """``value`` (0 <= value < 2**64) as a base-128 varint."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def walk(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """Each field of an encoded message as ``(number, wire type, value)``: an int for a
    varint, the raw bytes otherwise."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        elif wire == I64:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == I32:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire == LEN:
            size, pos = read_varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        else:
            raise AssertionError(f"wire type {wire} (field {number}) is not one proto3 writes")
        out.append((number, wire, value))
    return out


def packed_varints(payload: bytes) -> list[int]:
    values, pos = [], 0
    while pos < len(payload):
        value, pos = read_varint(payload, pos)
        values.append(value)
    return values


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


# -- one value of each type, and its encoding ------------------------------------------------------
TIMESTAMP = tag(1, VARINT) + varint(5) + tag(2, VARINT) + varint(6)  # seconds 5, nanos 6
RECORD = tag(1, LEN) + varint(1) + b"r" + tag(2, VARINT) + varint(7)  # run_id "r", TERM

#: ``type: (a value, its wire type, the field's payload)``; int32 -2 is the 10-byte varint of
#: its two's complement (not zigzag, as sint32 would be), uint64 takes more than 32 bits.
SCALARS: dict[str, tuple[Any, int, bytes]] = {
    "string": ("h\u00e9-1", LEN, "h\u00e9-1".encode()),
    "uint64": (2**40 + 3, VARINT, varint(2**40 + 3)),
    "int32": (-2, VARINT, varint(2**64 - 2)),
    "bool": (True, VARINT, varint(1)),
    "double": (0.25, I64, struct.pack("<d", 0.25)),
    "RunStatus": (RUN_STATUS["TERM"], VARINT, varint(7)),
}
MESSAGES = {"Timestamp": TIMESTAMP, "RunRecord": RECORD}
#: ``type: (values, packed payload)`` of repeated scalars (proto3 packs them).
PACKED = {
    "int32": ([3, -2], varint(3) + varint(2**64 - 2)),
    "RunStatus": ([1, 7], varint(1) + varint(7)),
}


def one_field(message: str, field: str) -> tuple[bytes, Any]:
    """(the platform's encoding of ``message`` with only ``field`` set, the value set)."""
    number, kind, label = PLATFORM[message][field]
    if kind in MESSAGES:
        payload = MESSAGES[kind]
        return tag(number, LEN) + varint(len(payload)) + payload, payload
    if label == "repeated":
        values, payload = PACKED[kind]
        return tag(number, LEN) + varint(len(payload)) + payload, values
    value, wire, payload = SCALARS[kind]
    length = varint(len(payload)) if wire == LEN else b""
    return tag(number, wire) + length + payload, value


def sdk_with(message: str, field: str, value: Any) -> Any:
    """The SDK's ``message`` with only ``field`` set to ``value`` (a payload for messages)."""
    _, kind, label = PLATFORM[message][field]
    built = protocol.message(message)()
    if kind in MESSAGES:
        target = getattr(built, field)
        (target.add() if label == "repeated" else target).MergeFromString(value)
    elif label == "repeated":
        getattr(built, field).extend(value)
    else:
        setattr(built, field, value)
    return built


def sdk_value(built: Any, message: str, field: str) -> Any:
    """What the SDK's decoded ``message`` holds in ``field``, as :func:`one_field` gives it."""
    _, kind, label = PLATFORM[message][field]
    got = getattr(built, field)
    if kind in MESSAGES:
        items = list(got) if label == "repeated" else [got]
        return b"".join(item.SerializeToString() for item in items)
    return list(got) if label == "repeated" else got


EVERY_FIELD = [(m, f) for m, fields in PLATFORM.items() for f in fields]
#: The fields of a scalar type, not repeated: those a default value can leave off the wire.
SCALAR_FIELDS = [
    (m, f)
    for m, f in EVERY_FIELD
    if PLATFORM[m][f][1] in SCALARS and PLATFORM[m][f][2] != "repeated"
]


def test_the_sdk_has_the_platforms_messages_and_methods() -> None:
    assert set(protocol.MESSAGES) <= set(PLATFORM), "a message the platform's .proto lacks"
    for message in protocol.MESSAGES:
        names = {f.name for f in protocol.message(message).DESCRIPTOR.fields}
        assert names == set(PLATFORM[message]), message
    assert protocol.METHODS == SERVICE_METHODS
    assert protocol.RUN_STATUS == RUN_STATUS
    for method in SERVICE_METHODS:
        assert protocol.method_path(method) == f"/gymgui.trainer.TrainerService/{method}"


@pytest.mark.parametrize(("message", "field"), EVERY_FIELD)
def test_each_field_goes_out_under_the_platforms_number_and_wire_type(
    message: str, field: str
) -> None:
    want, value = one_field(message, field)
    got = sdk_with(message, field, value).SerializeToString()
    assert walk(got) == walk(want), (
        f"{message}.{field}: the SDK writes {walk(got)}, the platform's .proto says {walk(want)} "
        "(field number, wire type, payload)"
    )
    assert got == want


@pytest.mark.parametrize(("message", "field"), EVERY_FIELD)
def test_each_field_the_platform_sends_is_read_from_its_number(message: str, field: str) -> None:
    encoded, value = one_field(message, field)
    decoded = protocol.message(message).FromString(encoded)
    assert sdk_value(decoded, message, field) == value, (
        f"{message}.{field} sent as field {PLATFORM[message][field][0]} is not read back"
    )


@pytest.mark.parametrize(("message", "field"), SCALAR_FIELDS)
def test_presence_is_the_platforms(message: str, field: str) -> None:
    """proto3: a field at its default is not sent, but an ``optional`` one that is set is."""
    number, kind, label = PLATFORM[message][field]
    zero = {"string": "", "bool": False, "double": 0.0}.get(kind, 0)
    got = sdk_with(message, field, zero).SerializeToString()
    if label == "optional":
        wire = LEN if kind == "string" else VARINT
        assert walk(got) == [(number, wire, b"" if wire == LEN else 0)]
    else:
        assert got == b""


def test_a_whole_episode_as_the_platform_sends_it_is_read_field_by_field() -> None:
    fields = PLATFORM["RunEpisode"]
    encoded = b"".join(one_field("RunEpisode", f)[0] for f in fields)
    episode = protocol.message("RunEpisode").FromString(encoded)
    for field in fields:
        assert sdk_value(episode, "RunEpisode", field) == one_field("RunEpisode", field)[1], field


# -- what `mosaic submit` sends, as bytes ----------------------------------------------------------
@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonDouble]:
    double = DaemonDouble(tmp_path)
    double.start()
    yield double
    double.stop()


def test_mosaic_submit_sends_its_requests_under_the_platforms_numbers(
    daemon: DaemonDouble,
) -> None:
    """The bytes `mosaic submit --wait` sent, as the daemon received them, read field by field
    with the platform's numbers: what a wrong number in the SDK would put elsewhere."""
    done = submit("example", "--daemon", daemon.address, "--wait", "--json", *SMALL)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    sent = dict(daemon.requests)
    assert list(sent) == ["GetHealth", "SubmitRun", "WatchRuns", "StreamRunEpisodes"]
    assert sent["GetHealth"] == b""
    submit_run = PLATFORM["SubmitRunRequest"]
    (run, config) = walk(sent["SubmitRun"])
    assert run == (submit_run["run_id"][0], LEN, run_id.encode())
    assert config[:2] == (submit_run["config_json"][0], LEN)
    assert isinstance(config[2], bytes)
    train_run = json.loads(config[2])
    jsonschema.validate(train_run, TRAIN_RUN_SCHEMA)
    assert train_run["metadata"]["worker"]["config"]["run_id"] == run_id
    assert sent["WatchRuns"] == b""  # since_seq 0 and no status filter: nothing to send
    stream = PLATFORM["StreamEpisodesRequest"]
    assert walk(sent["StreamRunEpisodes"]) == [(stream["run_id"][0], LEN, run_id.encode())]
