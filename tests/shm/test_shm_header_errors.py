"""A segment with a bad header gets a clear error, and the client's mapping is released."""

from __future__ import annotations

import struct

import pytest

from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.layout import OFF, STATE_READY, Layout, LayoutError
from mosaic_sdk.shm.segment import create_segment, unlink_segment


def _ready_segment(name: str, layout: Layout):  # noqa: ANN202 - mmap.mmap
    mm = create_segment(name, layout.total_size)
    layout.write_header(mm, 1)
    return mm


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("rewards_offset", "end", "rewards_offset is"),
        ("obs_size", 0, "obs_size must be a positive integer"),
        ("side_size", 100, "side_size must be 0 or a multiple"),
    ],
)
def test_corrupt_header_is_a_layout_error_not_a_buffer_error(
    segments, field: str, value: object, message: str
) -> None:
    layout = Layout.compute(4, 2, 1)
    mm = _ready_segment(segments.name(), layout)
    fmt = "<Q" if field.endswith(("offset", "side_size")) else "<I"
    struct.pack_into(fmt, mm, OFF[field], layout.total_size - 8 if value == "end" else value)
    struct.pack_into("<I", mm, OFF["state"], STATE_READY)
    with pytest.raises(LayoutError, match=message) as caught:
        SharedMemoryClient(segments.names[-1], attach_timeout=1.0)
    assert "corrupt transport header" in str(caught.value)
    mm.close()
    unlink_segment(segments.names[-1])  # ours: the fixture checks that nothing else leaked


def test_wrong_magic_names_what_it_found(segments) -> None:
    layout = Layout.compute(4, 2, 1)
    mm = _ready_segment(segments.name(), layout)
    mm[0:4] = b"JUNK"
    struct.pack_into("<I", mm, OFF["state"], STATE_READY)
    with pytest.raises(LayoutError, match="not a mosaic shm transport segment"):
        SharedMemoryClient(segments.names[-1], attach_timeout=1.0)
    mm.close()
    unlink_segment(segments.names[-1])
