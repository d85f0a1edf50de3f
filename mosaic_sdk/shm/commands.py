"""Command-channel messages: Python dataclasses <-> FlatBuffers ``Envelope`` bytes.

The wire format is ``schema/shm_commands.fbs`` (flatc's output: ``mosaic_sdk.shm.generated``).
A failed request is answered by the request's method with ``error`` set and no payload.

Two codecs write and read the same bytes: ``wire`` (a few ``struct`` calls per table, for the
envelope and the messages of ``WIRE_SPECS``) and the FlatBuffers runtime
(``encode_reference``/``decode_reference``; for GetSchema's response and Reset, which nest
spaces or JSON). ``$MOSAIC_SHM_CODEC=reference`` (or ``set_codec``) sends all through the runtime.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from typing import Any, get_args

import flatbuffers
import flatbuffers.table
import numpy as np

from mosaic_sdk.shm import services, wire
from mosaic_sdk.shm.generated import shm_commands_generated as fb
from mosaic_sdk.shm.messages import (
    CallRequest,
    CallResponse,
    CloseRequest,
    CloseResponse,
    GetSchemaRequest,
    GetSchemaResponse,
    Message,
    PingRequest,
    PingResponse,
    ResetRequest,
    ResetResponse,
    SetAttrRequest,
    SetAttrResponse,
    SpaceSpec,
)


class CommandError(RuntimeError):
    """The engine answered a command with an error, or sent a malformed message."""


# message class -> (Method value, Payload union tag)
_TAGS: dict[type, tuple[int | None, int]] = {cls: services.tags(cls) for cls in get_args(Message)}
# the field kinds (as ``services.FIELDS`` gives them) of the messages both codecs write alike
_GENERIC_KINDS: dict[type, dict[str, str]] = {
    GetSchemaRequest: {},
    CloseRequest: {},
    CloseResponse: {},
    SetAttrResponse: {},
    PingRequest: {"nonce": "u64"},
    PingResponse: {"nonce": "u64", "frame_seq": "u64"},
    CallRequest: {"name": "str", "args_pickle": "bytes"},
    CallResponse: {"results_pickle": "bytes"},
    SetAttrRequest: {"name": "str", "values_pickle": "bytes"},
}
_GENERIC_BY_TAG = {_TAGS[cls][1]: cls for cls in _GENERIC_KINDS}
METHOD_NAMES = {v: k for k, v in vars(fb.Method).items() if not k.startswith("_")}
_SPACE_KINDS = {k: v for k, v in vars(fb.SpaceKind).items() if not k.startswith("_")}
_SPACE_NAMES = {v: k for k, v in _SPACE_KINDS.items()}


@dataclass
class Decoded:
    """One decoded envelope."""

    correlation_id: int
    method: str
    error: str | None
    message: Message | None
    error_pickle: bytes = b""


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def to_json(value: Any) -> str:
    """JSON text of ``value``; numpy values become lists/numbers, others their repr."""
    return json.dumps(value, default=_json_default)


def _blob(b: flatbuffers.Builder, data: bytes) -> int | None:
    return int(b.CreateByteVector(data)) if data else None


def _bytes(get_numpy: Any, length: int) -> bytes:
    return bytes(get_numpy().tobytes()) if length else b""


def _vec(b: flatbuffers.Builder, values: Any, dtype: Any) -> int:
    return int(b.CreateNumpyVector(np.ascontiguousarray(values, dtype=dtype).ravel()))


def _space(b: flatbuffers.Builder, spec: SpaceSpec) -> int:
    dtype = b.CreateString(spec.dtype)
    shape = _vec(b, spec.shape, np.int64)
    low = _vec(b, spec.low, np.float64)
    high = _vec(b, spec.high, np.float64)
    start = _vec(b, spec.start, np.int64)
    nvec = _vec(b, spec.nvec, np.int64)
    fb.SpaceStart(b)
    fb.SpaceAddKind(b, _SPACE_KINDS[spec.kind])
    fb.SpaceAddShape(b, shape)
    fb.SpaceAddDtype(b, dtype)
    fb.SpaceAddLow(b, low)
    fb.SpaceAddHigh(b, high)
    fb.SpaceAddN(b, spec.n)
    fb.SpaceAddStart(b, start)
    fb.SpaceAddNvec(b, nvec)
    return int(fb.SpaceEnd(b))


def _payload(b: flatbuffers.Builder, m: Message) -> int:
    if isinstance(m, GetSchemaResponse):
        obs = _space(b, m.observation_space) if m.observation_space else None
        act = _space(b, m.action_space) if m.action_space else None
        env_id = b.CreateString(m.env_id)
        meta = b.CreateString(to_json(m.metadata))
        spaces_blob = _blob(b, m.spaces_pickle)
        image = None
        if m.image:
            fb.ImageConfigStart(b)
            fb.ImageConfigAddHeight(b, m.image[0])
            fb.ImageConfigAddWidth(b, m.image[1])
            fb.ImageConfigAddChannels(b, m.image[2])
            image = fb.ImageConfigEnd(b)
        fb.GetSchemaResponseStart(b)
        fb.GetSchemaResponseAddNumEnvs(b, m.num_envs)
        fb.GetSchemaResponseAddObsSize(b, m.obs_size)
        fb.GetSchemaResponseAddActSize(b, m.act_size)
        if obs is not None:
            fb.GetSchemaResponseAddObservationSpace(b, obs)
        if act is not None:
            fb.GetSchemaResponseAddActionSpace(b, act)
        if image is not None:
            fb.GetSchemaResponseAddImage(b, image)
        fb.GetSchemaResponseAddEnvId(b, env_id)
        fb.GetSchemaResponseAddMetadataJson(b, meta)
        fb.GetSchemaResponseAddNumWorkers(b, m.num_workers)
        if spaces_blob is not None:
            fb.GetSchemaResponseAddSpacesPickle(b, spaces_blob)
        return int(fb.GetSchemaResponseEnd(b))
    if isinstance(m, ResetRequest):
        if m.seeds and len(m.seeds) != len(m.env_ids):
            raise ValueError(
                f"reset: {len(m.seeds)} seeds for {len(m.env_ids)} env ids; give one seed per "
                "env (None for no seed) or no seeds"
            )
        ids = _vec(b, m.env_ids, np.uint32)
        seeds = _vec(b, [-1 if s is None else s for s in m.seeds], np.int64)
        options = b.CreateString(to_json(m.options)) if m.options is not None else None
        fb.ResetRequestStart(b)
        fb.ResetRequestAddEnvIds(b, ids)
        fb.ResetRequestAddSeeds(b, seeds)
        if options is not None:
            fb.ResetRequestAddOptionsJson(b, options)
        return int(fb.ResetRequestEnd(b))
    if isinstance(m, ResetResponse):
        ids = _vec(b, m.env_ids, np.uint32)
        infos = b.CreateString(to_json(m.infos))
        payload = _blob(b, m.payload_pickle)
        fb.ResetResponseStart(b)
        fb.ResetResponseAddEnvIds(b, ids)
        fb.ResetResponseAddInfosJson(b, infos)
        if payload is not None:
            fb.ResetResponseAddPayloadPickle(b, payload)
        return int(fb.ResetResponseEnd(b))
    return services.build(b, m, _GENERIC_KINDS.get(type(m)))


def encode_reference(
    message: Message | services.ServiceMessage | None,
    correlation_id: int,
    *,
    method: int | None = None,
    error: str | None = None,
    error_pickle: bytes = b"",
) -> bytes:
    """``encode`` through the FlatBuffers runtime's builder."""
    b = flatbuffers.Builder(256)
    payload = _payload(b, message) if message is not None else None
    err = b.CreateString(error) if error is not None else None
    err_blob = _blob(b, error_pickle)
    if message is not None:
        own, tag = _TAGS.get(type(message)) or services.TAGS[type(message)]
        if own is None and not method:
            raise ValueError(f"encode: {type(message).__name__} needs the method it answers")
        method = own if own is not None else method
    elif method is None:
        raise ValueError("encode: give a message, or a method with an error")
    fb.EnvelopeStart(b)
    fb.EnvelopeAddCorrelationId(b, correlation_id)
    fb.EnvelopeAddMethod(b, method)
    if err is not None:
        fb.EnvelopeAddErrorMessage(b, err)
    if err_blob is not None:
        fb.EnvelopeAddErrorPickle(b, err_blob)
    if payload is not None:
        fb.EnvelopeAddPayloadType(b, tag)
        fb.EnvelopeAddPayload(b, payload)
    b.Finish(fb.EnvelopeEnd(b), file_identifier=b"MSHC")
    return bytes(b.Output())


def _str(value: bytes | None) -> str:
    return value.decode() if value is not None else ""


def _ints(get_numpy: Any, length: int) -> list[int]:
    return [int(x) for x in get_numpy()] if length else []


def _space_from(t: Any) -> SpaceSpec | None:
    if t is None:
        return None
    kind = _SPACE_NAMES.get(t.Kind())
    if kind is None:
        raise CommandError(f"unknown space kind {t.Kind()} in a schema message")
    return SpaceSpec(
        kind=kind,
        shape=tuple(_ints(t.ShapeAsNumpy, t.ShapeLength())),
        dtype=_str(t.Dtype()),
        low=[float(x) for x in t.LowAsNumpy()] if t.LowLength() else [],
        high=[float(x) for x in t.HighAsNumpy()] if t.HighLength() else [],
        n=int(t.N()),
        start=_ints(t.StartAsNumpy, t.StartLength()),
        nvec=_ints(t.NvecAsNumpy, t.NvecLength()),
    )


def _message_from(tag: int, table: Any) -> Message:
    if tag == fb.Payload.GetSchemaResponse:
        r = fb.GetSchemaResponse()
        r.Init(table.Bytes, table.Pos)
        img = r.Image()
        return GetSchemaResponse(
            num_envs=r.NumEnvs(),
            obs_size=r.ObsSize(),
            act_size=r.ActSize(),
            observation_space=_space_from(r.ObservationSpace()),
            action_space=_space_from(r.ActionSpace()),
            image=(img.Height(), img.Width(), img.Channels()) if img is not None else None,
            env_id=_str(r.EnvId()),
            metadata=json.loads(_str(r.MetadataJson()) or "{}"),
            num_workers=r.NumWorkers(),
            spaces_pickle=_bytes(r.SpacesPickleAsNumpy, r.SpacesPickleLength()),
        )
    if tag == fb.Payload.ResetRequest:
        q = fb.ResetRequest()
        q.Init(table.Bytes, table.Pos)
        options = q.OptionsJson()
        return ResetRequest(
            env_ids=_ints(q.EnvIdsAsNumpy, q.EnvIdsLength()),
            seeds=[None if s < 0 else s for s in _ints(q.SeedsAsNumpy, q.SeedsLength())],
            options=json.loads(options.decode()) if options is not None else None,
        )
    if tag == fb.Payload.ResetResponse:
        p = fb.ResetResponse()
        p.Init(table.Bytes, table.Pos)
        return ResetResponse(
            env_ids=_ints(p.EnvIdsAsNumpy, p.EnvIdsLength()),
            infos=json.loads(_str(p.InfosJson()) or "[]"),
            payload_pickle=_bytes(p.PayloadPickleAsNumpy, p.PayloadPickleLength()),
        )
    cls = _GENERIC_BY_TAG.get(tag) or services.PAYLOAD_CLASSES.get(tag)
    if cls is not None:
        return services.read(cls, table, _GENERIC_KINDS.get(cls))  # type: ignore[no-any-return]
    raise CommandError(f"unknown payload type {tag} in a command envelope")


def _check_envelope(data: bytes) -> int:
    """The root table's position of an envelope (``CommandError`` when it cannot be one)."""
    if len(data) < 8 or data[4:8] != b"MSHC":
        raise CommandError(
            f"command of {len(data)} bytes is not a mosaic shm Envelope (identifier "
            f"{bytes(data[4:8])!r}, expected b'MSHC')"
        )
    root = int.from_bytes(data[0:4], "little")
    if not 8 <= root <= len(data) - 4:
        raise CommandError(f"command envelope root offset {root} is outside its {len(data)} bytes")
    return root


def envelope_ids(data: bytes) -> tuple[int, int]:
    """(correlation id, method) of an envelope that cannot be decoded whole (malformed, or
    only its first fragment kept) where they can be read, else zeros: whom to answer."""
    if len(data) < 8 or data[4:8] != b"MSHC":
        return 0, 0  # not an envelope at all: nothing in it can be trusted
    try:
        env = fb.Envelope.GetRootAs(data, 0)
        return int(env.CorrelationId()), int(env.Method())
    except Exception:
        return 0, 0


def decode_reference(data: bytes) -> Decoded:
    """``decode`` through the FlatBuffers runtime's accessors."""
    _check_envelope(data)
    try:
        env = fb.Envelope.GetRootAs(data, 0)
        err = env.ErrorMessage()
        tag = env.PayloadType()
        message = _message_from(tag, env.Payload()) if tag != fb.Payload.NONE else None
        return Decoded(
            correlation_id=env.CorrelationId(),
            method=METHOD_NAMES.get(env.Method(), f"method#{env.Method()}"),
            error=err.decode() if err is not None else None,
            message=message,
            error_pickle=_bytes(env.ErrorPickleAsNumpy, env.ErrorPickleLength()),
        )
    except CommandError:
        raise
    except Exception as exc:  # malformed buffers raise struct/index errors deep inside
        raise CommandError(f"malformed command envelope ({type(exc).__name__}: {exc})") from exc


# -- the lean codec (mosaic_sdk.shm.wire) -------------------------------------------------------
@dataclass
class _Envelope:
    correlation_id: int = 0
    method: int = 0
    error_message: str | None = None
    error_pickle: bytes = b""
    payload_type: int = 0
    payload: Any = None  # (TableSpec, message) when written; the table's position when read


_ENVELOPE = wire.TableSpec.of(  # fields in slot order (decode reads them so)
    _Envelope,
    {
        "correlation_id": "u64",
        "method": "u16",
        "error_message": "ostr",
        "error_pickle": "bytes",
        "payload_type": "u8",
        "payload": "union",
    },
    fb,
    "Envelope",
)
# The head of an envelope without error: root offset, identifier, vtable, table (correlation
# id u64, payload offset u32, method u16, payload type u8), the payload table following it.
_ENV_SLOTS = {f.attr: f.slot for f in _ENVELOPE.fields}
_HEAD = struct.Struct("<I4s4xHH6HiQIHBx")
_HEAD_TABLE = 28  # 4 past a multiple of 8, after the 16-byte vtable at 12
_HEAD_PAYLOAD = _HEAD_TABLE + 12
_U32 = struct.Struct("<I")


_HEAD_VT = [0] * 6
for _attr, _at in (("correlation_id", 4), ("payload", 12), ("method", 16), ("payload_type", 18)):
    _HEAD_VT[_ENV_SLOTS[_attr]] = _at
_HEAD_START = (_HEAD_TABLE, b"MSHC", 16, 19, *_HEAD_VT, 16)

#: message class -> (its wire spec, its Method or None when the caller says, its Payload tag)
WIRE_SPECS: dict[type, tuple[wire.TableSpec, int | None, int]] = {
    **{
        cls: (wire.TableSpec.of(cls, kinds, fb), *_TAGS[cls])
        for cls, kinds in _GENERIC_KINDS.items()
    },
    **{cls: (services.SPECS[cls], *services.TAGS[cls]) for cls in services.TAGS},
}
_WIRE_BY_TAG = {tag: spec for spec, _, tag in WIRE_SPECS.values()}
CODECS = ("wire", "reference")
_codec = os.environ.get("MOSAIC_SHM_CODEC", "").strip() or "wire"


def set_codec(name: str) -> None:
    """Choose the codec of this process: "wire" (the default) or "reference" (the runtime)."""
    global _codec
    if name not in CODECS:
        raise ValueError(f"codec {name!r}: use one of {', '.join(CODECS)}")
    _codec = name


def encode(
    message: Message | services.ServiceMessage | None,
    correlation_id: int,
    *,
    method: int | None = None,
    error: str | None = None,
    error_pickle: bytes = b"",
) -> bytes:
    """Bytes of one Envelope; ``error`` (with ``method``, no message) answers a failed request.

    ``error_pickle`` optionally carries the exception itself, for Python clients to re-raise.
    """
    entry = WIRE_SPECS.get(type(message)) if message is not None else None
    if _codec != "wire" or (message is not None and entry is None):
        return encode_reference(
            message, correlation_id, method=method, error=error, error_pickle=error_pickle
        )
    if entry is not None:
        spec, own, tag = entry
        if own is None:
            if not method:
                raise ValueError(f"encode: {type(message).__name__} needs the method it answers")
            own = method
        if error is None and not error_pickle:  # a plain message: one pack
            buf = bytearray(_HEAD.pack(*_HEAD_START, correlation_id, 0, own, tag))
            _U32.pack_into(buf, _HEAD_PAYLOAD, spec.write(buf, message) - _HEAD_PAYLOAD)
            return bytes(buf)
        env = _Envelope(correlation_id, own, error, error_pickle, tag, (spec, message))
    elif method is None:
        raise ValueError("encode: give a message, or a method with an error")
    else:
        env = _Envelope(correlation_id, method, error, error_pickle)
    buf = bytearray(b"\0\0\0\0MSHC")
    _U32.pack_into(buf, 0, _ENVELOPE.write(buf, env))
    return bytes(buf)


def decode(data: bytes) -> Decoded:
    """Decode one ring entry; ``CommandError`` when it is not a valid Envelope."""
    if _codec != "wire":
        return decode_reference(data)
    root = _check_envelope(data)
    try:
        cid, method, error, error_pickle, tag, at = _ENVELOPE.read_values(data, root)
        message = None
        if tag != fb.Payload.NONE:
            if at is None:
                raise CommandError(f"payload type {tag} without a payload table")
            spec = _WIRE_BY_TAG.get(tag)
            if spec is not None:
                message = spec.read(data, at)
            else:
                message = _message_from(tag, flatbuffers.table.Table(data, at))
        name = METHOD_NAMES.get(method) or f"method#{method}"
        return Decoded(cid, name, error, message, error_pickle)
    except CommandError:
        raise
    except Exception as exc:  # malformed buffers raise struct/index/unicode errors
        raise CommandError(f"malformed command envelope ({type(exc).__name__}: {exc})") from exc
