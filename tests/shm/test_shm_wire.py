"""The lean codec (``mosaic_sdk.shm.wire``) and the FlatBuffers runtime read each other's bytes.

A peer built on flatc's code for another language reads what the runtime's builder writes; the
lean codec must write bytes that the runtime's accessors read back to the same message, and
read back what the runtime's builder wrote, for every message it carries.
"""

from __future__ import annotations

import numpy as np
import pytest

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import services as sv
from tests.shm.test_shm_commands import MESSAGES as COMMAND_MESSAGES
from tests.shm.test_shm_services_codec import MESSAGES as SERVICE_MESSAGES

WIRE_MESSAGES = [m for m in COMMAND_MESSAGES + SERVICE_MESSAGES if type(m) in cmd.WIRE_SPECS]


def _method(message: object) -> int | None:
    return cmd.fb.Method.GetEntityPose if isinstance(message, sv.SHARED_RESPONSES) else None


def test_the_lean_codec_carries_every_service_message_and_the_small_commands() -> None:
    assert set(sv.TAGS) <= set(cmd.WIRE_SPECS)
    assert {cmd.PingRequest, cmd.PingResponse, cmd.CallRequest, cmd.CloseRequest} <= set(
        cmd.WIRE_SPECS
    )


@pytest.mark.parametrize("message", WIRE_MESSAGES, ids=lambda m: type(m).__name__)
def test_the_runtime_reads_what_the_lean_codec_writes(message: object) -> None:
    data = cmd.encode(message, 2**40 + 3, method=_method(message))
    assert cmd.fb.Envelope.EnvelopeBufferHasIdentifier(data, 0)
    decoded = cmd.decode_reference(data)
    assert (decoded.correlation_id, decoded.error, decoded.message) == (2**40 + 3, None, message)
    reference = cmd.encode_reference(message, 1, method=_method(message))
    assert decoded.method == cmd.decode_reference(reference).method


@pytest.mark.parametrize("message", WIRE_MESSAGES, ids=lambda m: type(m).__name__)
def test_the_lean_codec_reads_what_the_runtime_writes(message: object) -> None:
    data = cmd.encode_reference(message, 77, method=_method(message))
    decoded = cmd.decode(data)
    assert (decoded.correlation_id, decoded.error, decoded.message) == (77, None, message)


@pytest.mark.parametrize("writer", [cmd.encode, cmd.encode_reference])
@pytest.mark.parametrize("reader", [cmd.decode, cmd.decode_reference])
def test_error_envelopes_read_the_same_whichever_codec_wrote_them(writer, reader) -> None:  # noqa: ANN001
    error = "KeyError: 'q'"
    data = writer(None, 5, method=cmd.fb.Method.JointState, error=error, error_pickle=b"E")
    decoded = reader(data)
    assert (decoded.correlation_id, decoded.method, decoded.error) == (5, "JointState", error)
    assert (decoded.message, decoded.error_pickle) == (None, b"E")
    empty = reader(writer(None, 6, method=cmd.fb.Method.Ping, error=""))
    assert (empty.error, empty.error_pickle) == ("", b"")


@pytest.mark.parametrize(
    "names", [["é", ""], ["", "", "x"], ["ünïcødé joint", "a" * 5, "b" * 6, "c" * 7, "d" * 8]]
)
def test_strings_of_every_length_and_encoding_cross_read(names: list[str]) -> None:
    """Padding after each string depends on its UTF-8 length, not its character count."""
    message = sv.MujocoInfoResponse(version="3.1", joint_names=names, body_names=names[::-1])
    assert cmd.decode_reference(cmd.encode(message, 1)).message == message
    assert cmd.decode(cmd.encode_reference(message, 1)).message == message


def test_messages_outside_the_lean_codec_still_travel_through_the_runtime() -> None:
    message = cmd.ResetRequest(env_ids=[0, 5], seeds=[1, None], options={"level": 3})
    assert type(message) not in cmd.WIRE_SPECS
    assert cmd.decode(cmd.encode(message, 4)).message == message


def test_numpy_values_encode_as_their_lists_do() -> None:
    as_lists = sv.JointStateResponse(["a"], [2], [2], [0.5, 1.5], [2.5, -1.0], 3.0)
    as_numpy = sv.JointStateResponse(
        ["a"],
        np.array([2], dtype=np.int64),
        np.array([2]),
        np.array([0.5, 1.5], dtype=np.float32),
        np.array([2.5, -1.0]),
        np.float64(3.0),
    )
    assert cmd.encode(as_numpy, 1) == cmd.encode(as_lists, 1)
    assert cmd.decode(cmd.encode(as_numpy, 1)).message == as_lists


def test_a_value_too_large_for_its_field_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        cmd.encode(sv.JointStateRequest(env_id=2**32), 1)
    with pytest.raises(ValueError, match="does not fit"):
        cmd.encode(sv.SendControlRequest(env_ids=[-1]), 1)


def test_every_truncated_or_damaged_envelope_is_a_command_error() -> None:
    """Whatever bytes arrive, decode returns a message or raises CommandError, nothing else."""
    rng = np.random.default_rng(0)
    for message in [
        sv.JointStateResponse(["a", "b"], [1, 7], [1, 6], [0.5] * 8, [0.25] * 7, 1.5),
        sv.ListEntitiesResponse([sv.Entity(1, "body", "a", "world")]),
        sv.SetEntityPoseRequest(sv.EntityPose(3, "body", "ball", (1.0, 2.0, 3.0))),
        cmd.CallResponse(results_pickle=b"x" * 40),
    ]:
        data = cmd.encode(message, 9, method=_method(message))
        for cut in range(len(data)):
            try:
                cmd.decode(data[:cut])
            except cmd.CommandError:
                pass
        for _ in range(200):
            damaged = bytearray(data)
            for at in rng.integers(8, len(data), 3):
                damaged[at] = int(rng.integers(0, 256))
            try:
                cmd.decode(bytes(damaged))
            except cmd.CommandError:
                pass


def test_the_codec_can_be_chosen_and_refuses_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    message = sv.GetEntityPoseRequest(1, "body", "ball")
    monkeypatch.setattr(cmd, "_codec", "wire")
    lean = cmd.encode(message, 3)
    cmd.set_codec("reference")
    reference = cmd.encode(message, 3)
    assert reference == cmd.encode_reference(message, 3) and reference != lean
    assert cmd.decode(lean).message == message
    with pytest.raises(ValueError, match="use one of wire, reference"):
        cmd.set_codec("fast")
