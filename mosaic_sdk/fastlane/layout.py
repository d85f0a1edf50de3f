"""The FastLane segment layout, defined once: version-1 header, slots, and our extensions."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

MAGIC = b"FLAN"
VERSION = 1
EXTENSION_MAGIC = b"FLNX"
#: Revision of our additions (extension block + per-slot metrics); version-1 readers ignore it.
EXTENSION_REVISION = 2
FLAG_INVALIDATED = 1
SEGMENT_PREFIX = "mosaic.fastlane."
SLOT_ALIGN = 64
DEFAULT_CAPACITY = 4
PIXEL_FORMATS = {"GRAY": 1, "RGB": 3, "RGBA": 4}


@dataclass(frozen=True)
class Field:
    """One field of a fixed-size block: name, struct code, byte offset and meaning."""

    name: str
    code: str
    offset: int
    doc: str


def _fields(spec: list[tuple[str, str, str]]) -> tuple[tuple[Field, ...], struct.Struct]:
    codes = [code for _, code, _ in spec]
    offsets = [struct.calcsize("<" + "".join(codes[:i])) for i in range(len(spec))]
    fields = tuple(Field(n, c, off, doc) for (n, c, doc), off in zip(spec, offsets, strict=True))
    return fields, struct.Struct("<" + "".join(codes))


HEADER_FIELDS, HEADER = _fields(
    [
        ("magic", "4s", 'b"FLAN"'),
        ("version", "I", "1 (kept at 1 so deployed readers accept the segment)"),
        ("flags", "I", "bit 0 FLAG_INVALIDATED: re-attach; changed only by atomic OR"),
        ("capacity", "I", "number of slots; 0 while the segment is being initialised"),
        ("slot_size", "I", "bytes per slot, a multiple of 64"),
        ("payload_size", "I", "width*height*channels + metadata_size"),
        ("width", "I", "frame width in pixels"),
        ("height", "I", "frame height in pixels"),
        ("channels", "I", "1 (GRAY), 3 (RGB) or 4 (RGBA)"),
        ("fmt_hash", "I", "crc32 of the pixel format string"),
        ("head", "Q", "frames published so far; one release store per frame"),
        ("tail", "Q", "unused, 0 (version 1)"),
        ("last_reward", "d", "HUD copy for version-1 readers (outside the seqlock)"),
        ("rolling_return", "d", "HUD copy for version-1 readers"),
        ("step_rate_hz", "d", "HUD copy for version-1 readers"),
    ]
)

SLOT_HEADER_FIELDS, SLOT_HEADER = _fields(
    [
        ("seq", "Q", "2*n+1 while frame n is written, 2*n+2 once complete"),
        ("frame_len", "I", "bytes of frame data that follow"),
        ("metadata_len", "I", "bytes of metadata after the frame"),
    ]
)

SLOT_METRICS_FIELDS, SLOT_METRICS = _fields(
    [
        ("last_reward", "d", "metrics published with this slot's frame"),
        ("rolling_return", "d", "metrics published with this slot's frame"),
        ("step_rate_hz", "d", "metrics published with this slot's frame"),
        ("published_ns", "Q", "CLOCK_MONOTONIC of the publish, nanoseconds"),
    ]
)

EXTENSION_FIELDS, EXTENSION = _fields(
    [
        ("ext_magic", "4s", 'b"FLNX": the segment carries the extensions below'),
        ("ext_size", "I", "64"),
        ("ext_revision", "I", "2"),
        ("writer_pid", "I", "pid of the process that owns the segment"),
        ("generation", "Q", "1 for a new run; +1 each time the ring is re-created"),
        ("writer_start_ticks", "Q", "writer's start time (clock ticks since boot), 0 = unknown"),
        ("metrics_offset", "I", "offset of the per-slot metrics block inside each slot"),
        ("reserved0", "I", "0"),
        ("created_unix_ns", "Q", "wall-clock creation time"),
        ("reserved1", "Q", "0"),
        ("reserved2", "Q", "0"),
    ]
)

assert HEADER.size == 80 and SLOT_HEADER.size == 16
assert SLOT_METRICS.size == 32 and EXTENSION.size == 64


def offset_of(fields: tuple[Field, ...], name: str) -> int:
    """Byte offset of ``name`` in a field table."""
    return {f.name: f.offset for f in fields}[name]


# Offsets used on the hot paths.
OFF_FLAGS = offset_of(HEADER_FIELDS, "flags")
OFF_CAPACITY = offset_of(HEADER_FIELDS, "capacity")
OFF_HEAD = offset_of(HEADER_FIELDS, "head")
OFF_HUD = offset_of(HEADER_FIELDS, "last_reward")


def align(value: int, to: int) -> int:
    """``value`` rounded up to a multiple of ``to``."""
    return (value + to - 1) // to * to


def fmt_hash(pixel_format: str) -> int:
    """The header's ``fmt_hash``: crc32 of the pixel format string."""
    return zlib.crc32(pixel_format.encode("ascii")) & 0xFFFFFFFF


def segment_name(run_id: str) -> str:
    """POSIX shm name of a run's segment (no leading slash), as the deployed platform spells it."""
    if not isinstance(run_id, str) or not run_id:
        raise ValueError("FastLane run_id must be a non-empty string")
    if "\x00" in run_id:
        raise ValueError("FastLane run_id must not contain NUL characters")
    name = SEGMENT_PREFIX + run_id.replace("/", "_")
    if len(name.encode()) > 250:
        raise ValueError(f"FastLane run_id is too long for a shared-memory name ({len(run_id)})")
    return name


@dataclass(frozen=True)
class Geometry:
    """Sizes and offsets of one ring, derived from the frame shape and capacity."""

    width: int
    height: int
    channels: int
    metadata_size: int
    capacity: int

    @property
    def frame_bytes(self) -> int:
        return self.width * self.height * self.channels

    @property
    def payload_size(self) -> int:
        return self.frame_bytes + self.metadata_size

    @property
    def metrics_offset(self) -> int:
        """Offset of the per-slot metrics inside a slot (8-aligned, after the payload)."""
        return align(SLOT_HEADER.size + self.payload_size, 8)

    @property
    def slot_size(self) -> int:
        return align(self.metrics_offset + SLOT_METRICS.size, SLOT_ALIGN)

    def slot_offset(self, index: int) -> int:
        return HEADER.size + index * self.slot_size

    @property
    def extension_offset(self) -> int:
        return HEADER.size + self.capacity * self.slot_size

    @property
    def segment_size(self) -> int:
        return self.extension_offset + EXTENSION.size


def describe() -> dict[str, Any]:
    """The layout as plain data: what ``schema/fastlane_layout.json`` holds."""

    def table(fields: tuple[Field, ...], st: struct.Struct) -> dict[str, Any]:
        return {
            "size": st.size,
            "struct": st.format,
            "fields": [
                {"name": f.name, "offset": f.offset, "type": f.code, "doc": f.doc} for f in fields
            ],
        }

    return {
        "title": "FastLane shared-memory segment",
        "byte_order": "little",
        "magic": MAGIC.decode(),
        "version": VERSION,
        "extension_magic": EXTENSION_MAGIC.decode(),
        "extension_revision": EXTENSION_REVISION,
        "flags": {"FLAG_INVALIDATED": FLAG_INVALIDATED},
        "segment_name": SEGMENT_PREFIX + "{run_id with '/' replaced by '_'}",
        "slot_align": SLOT_ALIGN,
        "default_capacity": DEFAULT_CAPACITY,
        "pixel_formats": dict(PIXEL_FORMATS),
        "regions": {
            "header": {"offset": "0", **table(HEADER_FIELDS, HEADER)},
            "slot_header": {
                "offset": "80 + i * slot_size",
                **table(SLOT_HEADER_FIELDS, SLOT_HEADER),
            },
            "slot_metrics": {
                "offset": "slot + metrics_offset, metrics_offset = align8(16 + payload_size)",
                **table(SLOT_METRICS_FIELDS, SLOT_METRICS),
            },
            "extension": {
                "offset": "80 + capacity * slot_size",
                **table(EXTENSION_FIELDS, EXTENSION),
            },
        },
        "slot_size": "align64(metrics_offset + 32)",
        "seqlock": {
            "slot_of_frame_n": "(n - 1) % capacity",
            "in_flight_seq": "2*n + 1",
            "complete_seq": "2*n + 2",
        },
    }
