"""The messages of the MOSAIC trainer daemon's gRPC service, built in code from its facts."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

PACKAGE = "gymgui.trainer"
SERVICE = f"{PACKAGE}.TrainerService"
FILE_NAME = "mosaic_sdk/submit/gymgui_trainer.proto"

#: RunStatus: the daemon's finite state machine, by name without its ``RUN_STATUS_`` prefix.
_STATUSES = ("UNSPECIFIED", "INIT", "HSHK", "RDY", "EXEC", "PAUSE", "FAULT", "TERM")
RUN_STATUS: dict[str, int] = {name: number for number, name in enumerate(_STATUSES)}
STATUS_NAMES: dict[int, str] = {number: name for name, number in RUN_STATUS.items()}
#: States a run does not leave.
FINAL_STATUSES: frozenset[str] = frozenset({"FAULT", "TERM"})

_F = descriptor_pb2.FieldDescriptorProto
_STRING, _BOOL, _DOUBLE = _F.TYPE_STRING, _F.TYPE_BOOL, _F.TYPE_DOUBLE
_UINT64, _INT32, _ENUM, _MESSAGE = _F.TYPE_UINT64, _F.TYPE_INT32, _F.TYPE_ENUM, _F.TYPE_MESSAGE
_TIMESTAMP = ".google.protobuf.Timestamp"
_STATUS = f".{PACKAGE}.RunStatus"


class Field(NamedTuple):
    """One field of a message (``optional``: proto3's, a synthetic oneof of its own)."""

    name: str
    number: int
    kind: int
    type_name: str = ""
    repeated: bool = False
    optional: bool = False


MESSAGES: dict[str, tuple[Field, ...]] = {
    "SubmitRunRequest": (Field("run_id", 1, _STRING), Field("config_json", 2, _STRING)),
    "SubmitRunResponse": (Field("run_id", 1, _STRING), Field("digest", 2, _STRING)),
    "CancelRunRequest": (Field("run_id", 1, _STRING),),
    "CancelRunResponse": (),
    "RunRecord": (
        Field("run_id", 1, _STRING),
        Field("status", 2, _ENUM, _STATUS),
        Field("digest", 3, _STRING),
        Field("created_at", 4, _MESSAGE, _TIMESTAMP),
        Field("updated_at", 5, _MESSAGE, _TIMESTAMP),
        Field("last_heartbeat", 6, _MESSAGE, _TIMESTAMP),
        Field("gpu_slot", 7, _INT32, optional=True),
        Field("failure_reason", 8, _STRING, optional=True),
        Field("gpu_slots", 9, _INT32, repeated=True),
        Field("seq_id", 10, _UINT64),
    ),
    "ListRunsRequest": (Field("status_filter", 1, _ENUM, _STATUS, repeated=True),),
    "ListRunsResponse": (Field("runs", 1, _MESSAGE, f".{PACKAGE}.RunRecord", repeated=True),),
    "WatchRunsRequest": (
        Field("status_filter", 1, _ENUM, _STATUS, repeated=True),
        Field("since_seq", 2, _UINT64),
    ),
    "HealthCheckRequest": (),
    "HealthCheckResponse": (
        Field("pid", 1, _UINT64),
        Field("started_at", 2, _MESSAGE, _TIMESTAMP),
        Field("listen_address", 3, _STRING),
        Field("healthy", 4, _BOOL),
    ),
    "StreamEpisodesRequest": (Field("run_id", 1, _STRING), Field("since_seq", 2, _UINT64)),
    "RunEpisode": (
        Field("run_id", 1, _STRING),
        Field("episode_index", 2, _UINT64),
        Field("total_reward", 3, _DOUBLE),
        Field("steps", 4, _UINT64),
        Field("terminated", 5, _BOOL),
        Field("truncated", 6, _BOOL),
        Field("metadata_json", 7, _STRING),
        Field("timestamp", 8, _MESSAGE, _TIMESTAMP),
        Field("seq_id", 9, _UINT64),
        Field("agent_id", 10, _STRING),
        Field("worker_id", 11, _STRING),
    ),
}

#: The service's methods this SDK uses: (request, response, server streams).
METHODS: dict[str, tuple[str, str, bool]] = {
    "SubmitRun": ("SubmitRunRequest", "SubmitRunResponse", False),
    "CancelRun": ("CancelRunRequest", "CancelRunResponse", False),
    "ListRuns": ("ListRunsRequest", "ListRunsResponse", False),
    "WatchRuns": ("WatchRunsRequest", "RunRecord", True),
    "GetHealth": ("HealthCheckRequest", "HealthCheckResponse", False),
    "StreamRunEpisodes": ("StreamEpisodesRequest", "RunEpisode", True),
}


def _file_proto() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name=FILE_NAME, package=PACKAGE, syntax="proto3", dependency=[timestamp_pb2.DESCRIPTOR.name]
    )
    enum = file.enum_type.add(name="RunStatus")
    for name, number in RUN_STATUS.items():
        enum.value.add(name=f"RUN_STATUS_{name}", number=number)
    for message_name, fields in MESSAGES.items():
        message = file.message_type.add(name=message_name)
        for name, number, kind, type_name, repeated, optional in fields:
            field = message.field.add(
                name=name,
                number=number,
                type=kind,  # type: ignore[arg-type]
                label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL,
            )
            if type_name:
                field.type_name = type_name
            if optional:
                field.proto3_optional = True
                field.oneof_index = len(message.oneof_decl)
                message.oneof_decl.add(name=f"_{name}")
    service = file.service.add(name="TrainerService")
    for method, (request, response, streams) in METHODS.items():
        service.method.add(
            name=method,
            input_type=f".{PACKAGE}.{request}",
            output_type=f".{PACKAGE}.{response}",
            server_streaming=streams,
        )
    return file


@lru_cache(maxsize=1)
def _classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(timestamp_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(_file_proto())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in MESSAGES
    }


def message(name: str) -> Any:
    """The message class ``name`` (one of :data:`MESSAGES`)."""
    return _classes()[name]


def method_path(method: str) -> str:
    """The gRPC path of a method of the trainer service (``/gymgui.trainer.TrainerService/X``)."""
    if method not in METHODS:
        raise KeyError(f"unknown TrainerService method {method!r}")
    return f"/{SERVICE}/{method}"


def status_name(number: int) -> str:
    """``"TERM"`` for 7; an unknown number as ``"UNKNOWN(9)"``."""
    return STATUS_NAMES.get(int(number), f"UNKNOWN({int(number)})")
