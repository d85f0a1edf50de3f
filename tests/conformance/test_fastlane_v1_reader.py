"""The conformance suite's own version-1 FastLane reader, on segments written by hand."""

from __future__ import annotations

import os
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from mosaic_sdk.conformance.fastlane_v1 import (
    HEADER,
    SLOT_HEADER,
    V1SegmentReader,
    segment_name,
)

pytestmark = pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs /dev/shm")


@pytest.fixture
def segment() -> Iterator[Path]:
    path = Path("/dev/shm") / f"mosaic.conformance-test.{uuid.uuid4().hex}"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def write(path: Path, *, head: int, slots: list[tuple[int, bytes]], w=2, h=2, c=3, cap=2):
    slot_size = 64
    data = bytearray(HEADER.size + cap * slot_size)
    HEADER.pack_into(
        data,
        0,
        b"FLAN",
        1,
        0,
        cap,
        slot_size,
        w * h * c,
        w,
        h,
        c,
        zlib.crc32(b"RGB"),
        head,
        0,
        1.5,
        2.5,
        60.0,
    )
    for index, (seq, frame) in enumerate(slots):
        offset = HEADER.size + index * slot_size
        SLOT_HEADER.pack_into(data, offset, seq, len(frame), 0)
        data[offset + SLOT_HEADER.size : offset + SLOT_HEADER.size + len(frame)] = frame
    path.write_bytes(bytes(data))


def test_reads_the_newest_complete_frame(segment: Path) -> None:
    write(segment, head=2, slots=[(4, b"\x01" * 12), (6, b"\x02" * 12)])
    with V1SegmentReader(segment.name) as reader:
        header = reader.header()
        assert (header.width, header.height, header.channels, header.head) == (2, 2, 3, 2)
        frame = reader.latest_frame()
    assert frame is not None and frame.number == 2 and frame.pixels == b"\x02" * 12


def test_skips_a_frame_in_flight(segment: Path) -> None:
    write(segment, head=2, slots=[(4, b"\x01" * 12), (5, b"\x02" * 12)])
    with V1SegmentReader(segment.name) as reader:
        frame = reader.latest_frame()
    assert frame is not None and frame.number == 1 and frame.pixels == b"\x01" * 12


def test_nothing_published_and_oversized_frames(segment: Path) -> None:
    write(segment, head=0, slots=[])
    with V1SegmentReader(segment.name) as reader:
        assert reader.latest_frame() is None
    write(segment, head=1, slots=[(4, b"\x00" * 60)])
    with V1SegmentReader(segment.name) as reader, pytest.raises(ValueError, match="more than"):
        reader.latest_frame()


def test_segment_name_follows_the_deployed_rule() -> None:
    assert segment_name("run/1") == "mosaic.fastlane.run_1"
    assert not os.path.exists("/dev/shm/" + segment_name("never-created-" + uuid.uuid4().hex))
