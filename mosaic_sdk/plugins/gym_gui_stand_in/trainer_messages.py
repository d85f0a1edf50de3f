"""The stand-in's ``gym_gui.services.trainer.proto.trainer_pb2``: the two protobuf messages of
the trainer daemon's ``RegisterWorker`` call (CleanRL's ``--grpc`` handshake)."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "gymgui.trainer"
SERVICE = "TrainerService"

_T = descriptor_pb2.FieldDescriptorProto
_MESSAGES: dict[str, tuple[tuple[str, int, int], ...]] = {
    "RegisterWorkerRequest": (
        ("run_id", 1, _T.TYPE_STRING),
        ("worker_id", 2, _T.TYPE_STRING),
        ("worker_kind", 3, _T.TYPE_STRING),
        ("proto_version", 4, _T.TYPE_STRING),
        ("schema_id", 5, _T.TYPE_STRING),
        ("schema_version", 6, _T.TYPE_UINT32),
        ("supports_pause", 7, _T.TYPE_BOOL),
        ("supports_checkpoint", 8, _T.TYPE_BOOL),
    ),
    "RegisterWorkerResponse": (
        ("accepted_version", 1, _T.TYPE_STRING),
        ("session_token", 2, _T.TYPE_STRING),
    ),
}


def _build() -> tuple[Any, dict[str, Any]]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="mosaic_sdk_stand_in/trainer.proto", package=PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field_name, number, kind in fields:
            message.field.add(name=field_name, number=number, type=kind, label=_T.LABEL_OPTIONAL)
    service = proto.service.add(name=SERVICE)
    service.method.add(
        name="RegisterWorker",
        input_type=f".{PACKAGE}.RegisterWorkerRequest",
        output_type=f".{PACKAGE}.RegisterWorkerResponse",
    )
    pool = descriptor_pool.DescriptorPool()
    file = pool.Add(proto)
    classes = {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }
    return pool.FindFileByName(proto.name) if file is None else file, classes


DESCRIPTOR, _CLASSES = _build()
RegisterWorkerRequest = _CLASSES["RegisterWorkerRequest"]
RegisterWorkerResponse = _CLASSES["RegisterWorkerResponse"]

__all__ = ["DESCRIPTOR", "RegisterWorkerRequest", "RegisterWorkerResponse"]
