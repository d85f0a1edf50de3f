"""The FlatBuffers command channel: generated code, runtime compatibility, message round trips."""

from __future__ import annotations

import importlib.util
import pathlib

import flatbuffers
import numpy as np
import pytest

from mosaic_sdk.shm import commands as cmd

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _flatc_script():
    spec = importlib.util.spec_from_file_location("shm_flatc", ROOT / "schema" / "shm_flatc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_generated_code_matches_the_schema(tmp_path: pathlib.Path) -> None:
    flatc = _flatc_script()
    version = flatc.flatc_version()
    if version is None:
        pytest.skip("flatc is not installed (apt-get install flatbuffers-compiler)")
    if version != flatc.FLATC_VERSION:
        pytest.skip(
            f"flatc {version} installed; the committed code comes from {flatc.FLATC_VERSION}"
        )
    fresh = flatc.generate(tmp_path)
    committed = ROOT / "mosaic_sdk" / "shm" / "generated" / flatc.GENERATED
    assert fresh.read_text() == committed.read_text(), (
        "mosaic_sdk/shm/generated is stale: run `python schema/shm_flatc.py` and commit"
    )


SPACE = cmd.SpaceSpec("Box", (2, 2), "float32", [-1.0, -2.0, float("-inf"), 0.0], [1, 2, 3, 4])
MESSAGES = [
    cmd.GetSchemaRequest(),
    cmd.GetSchemaResponse(
        num_envs=4096,
        obs_size=100,
        act_size=12,
        observation_space=SPACE,
        action_space=cmd.SpaceSpec("Discrete", (), "int64", n=3, start=[-1]),
        image=(64, 48, 3),
        env_id="CartPole-v1",
        metadata={"render_fps": 50, "render_modes": ["rgb_array"]},
        num_workers=2,
        spaces_pickle=b"\x80\x05pickled spaces",
    ),
    cmd.GetSchemaResponse(1, 1, 0, None, None),
    cmd.ResetRequest(env_ids=[0, 5, 7], seeds=[1, None, 2**40], options={"level": 3}),
    cmd.ResetRequest(),
    cmd.ResetResponse(env_ids=[0, 5], infos=[{"a": 1}, {}]),
    cmd.ResetResponse(env_ids=[1], infos=[{}], payload_pickle=b"\x00" * 300),
    cmd.CallRequest(name="render", args_pickle=b"args"),
    cmd.CallRequest(name="gravity"),
    cmd.CallResponse(results_pickle=bytes(range(256)) * 4),
    cmd.SetAttrRequest(name="gravity", values_pickle=b"[9.8]"),
    cmd.SetAttrResponse(),
    cmd.CloseRequest(),
    cmd.CloseResponse(),
    cmd.PingRequest(nonce=2**63),
    cmd.PingResponse(nonce=1, frame_seq=99),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_round_trips(message: object) -> None:
    decoded = cmd.decode(cmd.encode(message, correlation_id=42))
    assert decoded.correlation_id == 42
    assert decoded.error is None
    assert decoded.message == message


def test_error_envelope_carries_method_and_text() -> None:
    data = cmd.encode(None, 7, method=cmd.fb.Method.Reset, error="no such scene")
    decoded = cmd.decode(data)
    assert (decoded.method, decoded.error, decoded.message) == ("Reset", "no such scene", None)


def test_error_envelope_can_carry_the_exception_itself() -> None:
    data = cmd.encode(None, 3, method=cmd.fb.Method.Call, error="KeyError: 'x'", error_pickle=b"E")
    decoded = cmd.decode(data)
    assert (decoded.method, decoded.error_pickle) == ("Call", b"E")


def test_numpy_values_in_infos_are_encoded() -> None:
    msg = cmd.ResetResponse([0], [{"pos": np.arange(3), "x": np.float32(1.5)}])
    assert cmd.decode(cmd.encode(msg, 1)).message.infos == [{"pos": [0, 1, 2], "x": 1.5}]


def test_seeds_must_match_env_ids() -> None:
    with pytest.raises(ValueError, match="one seed per env"):
        cmd.encode(cmd.ResetRequest(env_ids=[1, 2], seeds=[3]), 1)


@pytest.mark.parametrize("data", [b"", b"garbage!", b"\x00" * 4 + b"MSHC" + b"\xff" * 8])
def test_malformed_envelopes_raise_command_error(data: bytes) -> None:
    with pytest.raises(cmd.CommandError):
        cmd.decode(data)


def test_generated_code_works_with_the_flatbuffers_runtime() -> None:
    """Build with the runtime's Builder, read with the generated accessors, and back."""
    b = flatbuffers.Builder(64)
    cmd.fb.PingRequestStart(b)
    cmd.fb.PingRequestAddNonce(b, 5)
    ping = cmd.fb.PingRequestEnd(b)
    cmd.fb.EnvelopeStart(b)
    cmd.fb.EnvelopeAddCorrelationId(b, 3)
    cmd.fb.EnvelopeAddMethod(b, cmd.fb.Method.Ping)
    cmd.fb.EnvelopeAddPayloadType(b, cmd.fb.Payload.PingRequest)
    cmd.fb.EnvelopeAddPayload(b, ping)
    b.Finish(cmd.fb.EnvelopeEnd(b), file_identifier=b"MSHC")
    data = bytes(b.Output())
    assert cmd.fb.Envelope.EnvelopeBufferHasIdentifier(data, 0)
    assert cmd.decode(data).message == cmd.PingRequest(nonce=5)
