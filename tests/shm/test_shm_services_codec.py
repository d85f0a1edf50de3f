"""The engine services' messages travel through FlatBuffers envelopes unchanged."""

from __future__ import annotations

import pytest

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import services as sv

MESSAGES = [cls() for cls in sv.TAGS] + [
    sv.AgentResetRequest(
        [1, 2],
        sv.SimulationContract(
            mass_scale_low=0.5, gravity=[0.0, 0.0, -3.0], seed=4, restore_defaults=True
        ),
    ),
    sv.AgentSchemaResponse(3, "m", ["a", "b"], ["u"], [-1.0], [1.0], 0.01, 2, 100),
    sv.ListEntitiesResponse([sv.Entity(1, "body", "a", "world"), sv.Entity(2, "geom", "g", "a")]),
    sv.SetEntityPoseRequest(
        sv.EntityPose(3, "body", "ball", (1.0, 2.0, 3.0), (0.5, 0.5, 0.5, 0.5))
    ),
    sv.DebugDrawRequest(
        [0],
        [
            sv.DebugShape(
                "text", (1.0, 2.0, 3.0), (0.0, 0.0, 0.0), 0.1, [1.0, 1.0, 0.0, 1.0], "hi"
            ),
            sv.DebugShape("sphere"),
        ],
        True,
    ),
    sv.SetSimModeRequest("run", True, 3),
    sv.JointStateResponse(["a", "b"], [1, 7], [1, 6], [0.5] * 8, [0.25] * 7, 1.5),
    sv.TelemetryFrame(7, 2**40, 0.5, 9, [0, 3], [1.0, -2.5]),
    sv.ImageFrame(7, 1, "overhead", [1], 64, 48, 3, 0.25, 12),
    sv.ListCamerasResponse([sv.CameraInfo(0, "top", 45.0)], 64, 64, 3),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_service_message_round_trips(message: object) -> None:
    method = cmd.fb.Method.GetEntityPose if isinstance(message, sv.SHARED_RESPONSES) else None
    decoded = cmd.decode(cmd.encode(message, correlation_id=9, method=method))
    assert decoded.correlation_id == 9
    assert decoded.message == message
    assert decoded.method != "None"


def test_every_service_table_of_the_schema_has_a_message() -> None:
    union = [k for k in vars(cmd.fb.Payload) if not k.startswith("_") and k != "NONE"]
    generic = {
        "GetSchemaRequest",
        "GetSchemaResponse",
        "ResetRequest",
        "ResetResponse",
        "CloseRequest",
        "CloseResponse",
        "PingRequest",
        "PingResponse",
        "CallRequest",
        "CallResponse",
        "SetAttrRequest",
        "SetAttrResponse",
    }
    assert sorted(set(union) - generic) == sorted(cls.__name__ for cls in sv.TAGS)


def test_a_shared_response_needs_its_method() -> None:
    with pytest.raises(ValueError, match="needs the method"):
        cmd.encode(sv.StreamResponse(1), 1)


def test_unknown_enum_names_are_refused() -> None:
    with pytest.raises(ValueError, match="not one of"):
        cmd.encode(sv.SetSimModeRequest("fly"), 1)
