"""The stand-in's ``gym_gui.services.trainer.proto.trainer_pb2_grpc``: client stub and servicer
pieces of the trainer daemon's ``RegisterWorker`` call only (the other calls are the GUI's).
Needs ``grpcio``."""

from __future__ import annotations

from typing import Any

import grpc

from mosaic_sdk.plugins.gym_gui_stand_in.trainer_messages import (
    PACKAGE,
    SERVICE,
    RegisterWorkerRequest,
    RegisterWorkerResponse,
)

SERVICE_NAME = f"{PACKAGE}.{SERVICE}"
REGISTER_WORKER = f"/{SERVICE_NAME}/RegisterWorker"


class TrainerServiceStub:
    """Client side: ``stub.RegisterWorker(request, timeout=...)`` returns the response."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.RegisterWorker = channel.unary_unary(  # noqa: N815 - the RPC's name
            REGISTER_WORKER,
            request_serializer=RegisterWorkerRequest.SerializeToString,
            response_deserializer=RegisterWorkerResponse.FromString,
        )


class TrainerServiceServicer:
    """Server side: override ``RegisterWorker(request, context)``."""

    def RegisterWorker(self, request: Any, context: Any) -> Any:  # noqa: N802
        context.set_code(grpc.StatusCode.UNIMPLEMENTED)
        context.set_details("RegisterWorker is not implemented by this servicer")
        raise NotImplementedError("RegisterWorker is not implemented by this servicer")


def add_TrainerServiceServicer_to_server(servicer: Any, server: grpc.Server) -> None:  # noqa: N802
    handler = grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "RegisterWorker": grpc.unary_unary_rpc_method_handler(
                servicer.RegisterWorker,
                request_deserializer=RegisterWorkerRequest.FromString,
                response_serializer=RegisterWorkerResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))


__all__ = [
    "REGISTER_WORKER",
    "TrainerServiceServicer",
    "TrainerServiceStub",
    "add_TrainerServiceServicer_to_server",
]
