"""Checks that keep a FastLane reader inside the slot it reads, whatever the segment says."""

from __future__ import annotations

from dataclasses import dataclass

from mosaic_sdk.fastlane.layout import HEADER, PIXEL_FORMATS, SLOT_HEADER, SLOT_METRICS
from mosaic_sdk.fastlane.records import FastLaneCorruptError
from mosaic_sdk.fastlane.segment import SegmentStatus

_CHANNELS = sorted(set(PIXEL_FORMATS.values()))


@dataclass(frozen=True)
class RingGeometry:
    """The sizes a reader may rely on once :func:`ring_geometry` accepted a segment."""

    width: int
    height: int
    channels: int
    capacity: int
    slot_size: int
    frame_bytes: int
    #: Largest ``frame_len + metadata_len`` a slot can hold: never past the slot's end nor
    #: into its metrics block.
    payload_cap: int
    #: Offset of the per-slot metrics inside a slot, or -1 (version-1 writer: header HUD).
    metrics_offset: int

    @property
    def metadata_cap(self) -> int:
        return self.payload_cap - self.frame_bytes


def corrupt_slot(name: str, problem: str) -> FastLaneCorruptError:
    """The error for segment ``name`` that contradicts itself (``problem`` names the field)."""
    return FastLaneCorruptError(
        f"FastLane segment {name!r} is corrupt: {problem}; no frame was taken from it (its "
        "writer is broken or something else wrote into it: restart the run)"
    )


def ring_geometry(status: SegmentStatus) -> RingGeometry:
    """Check an initialised segment's header and extension block against each other and the
    segment's size; the checked sizes, or :class:`FastLaneCorruptError` naming the field."""
    name = status.name
    width, height, channels = status.width, status.height, status.channels
    if channels not in _CHANNELS:
        raise corrupt_slot(name, f"the header says {channels} channels (FastLane has 1, 3 or 4)")
    if width == 0 or height == 0:
        raise corrupt_slot(
            name, f"the header says a {width}x{height} frame (both sides must be >= 1)"
        )
    slot_size, capacity = status.slot_size, status.capacity
    if slot_size % 8:
        raise corrupt_slot(
            name,
            f"slot_size {slot_size} is not a multiple of 8, so slot sequence words cannot be "
            "read atomically (a version-1 writer with unaligned slots: upgrade it to "
            "mosaic-worker-sdk)",
        )
    ring_end = HEADER.size + capacity * slot_size
    if ring_end > status.size:
        raise corrupt_slot(
            name,
            f"the header says {capacity} slots of {slot_size} bytes ({ring_end} bytes with the "
            f"header) but the segment holds {status.size} bytes",
        )
    frame_bytes = width * height * channels
    room = slot_size - SLOT_HEADER.size
    if frame_bytes > room:
        raise corrupt_slot(
            name,
            f"a {width}x{height}x{channels} frame is {frame_bytes} bytes but a {slot_size}-byte "
            f"slot has room for {max(room, 0)} after its header",
        )
    if frame_bytes > status.payload_size:
        raise corrupt_slot(
            name,
            f"payload_size {status.payload_size} is smaller than a {width}x{height}x{channels} "
            f"frame ({frame_bytes} bytes)",
        )
    metrics_offset = -1
    if status.has_extension:
        # Our writer: payload, then the slot metrics, inside the slot, exactly as laid out.
        metrics_offset = status.metrics_offset
        lowest = SLOT_HEADER.size + status.payload_size
        if lowest + SLOT_METRICS.size > slot_size:
            raise corrupt_slot(
                name,
                f"payload_size {status.payload_size} does not fit a {slot_size}-byte slot with "
                f"its {SLOT_HEADER.size}-byte header and {SLOT_METRICS.size}-byte metrics",
            )
        if metrics_offset % 8 or not lowest <= metrics_offset <= slot_size - SLOT_METRICS.size:
            raise corrupt_slot(
                name,
                f"the extension block puts the slot metrics at offset {metrics_offset}, not at "
                f"an 8-aligned offset in {lowest}..{slot_size - SLOT_METRICS.size} (after a "
                f"{status.payload_size}-byte payload, inside a {slot_size}-byte slot)",
            )
        payload_cap = status.payload_size
    else:
        # A version-1 writer may declare more payload than its slots hold (metadata_size is
        # counted in payload_size, not always in slot_size): never read past the slot.
        payload_cap = min(status.payload_size, room)
    return RingGeometry(
        width, height, channels, capacity, slot_size, frame_bytes, payload_cap, metrics_offset
    )


def slot_problem(geometry: RingGeometry, frame_len: int, metadata_len: int) -> str | None:
    """What is wrong with a complete slot's lengths, or None when they fit the ring."""
    if frame_len != geometry.frame_bytes:
        return (
            f"a slot holds a {frame_len}-byte frame but the header's "
            f"{geometry.width}x{geometry.height}x{geometry.channels} frames are "
            f"{geometry.frame_bytes} bytes"
        )
    if metadata_len > geometry.metadata_cap:
        return (
            f"a slot claims {metadata_len} bytes of metadata but has room for "
            f"{geometry.metadata_cap}"
        )
    return None
