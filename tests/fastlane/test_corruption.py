"""A corrupt or hostile segment gives FastLaneCorruptError, never a stray read or a bad frame.

Each test makes its own segment (a real writer's, then bytes changed in place, or a copy with
changes written into a segment of its own) and unlinks it whatever happens.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mosaic_sdk.fastlane import (
    FastLaneConfig,
    FastLaneCorruptError,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneUnavailableError,
    FastLaneWriter,
)
from mosaic_sdk.fastlane import segment as segment_module
from mosaic_sdk.fastlane.layout import (
    EXTENSION,
    EXTENSION_FIELDS,
    HEADER,
    HEADER_FIELDS,
    SLOT_HEADER,
    offset_of,
    segment_name,
)
from mosaic_sdk.fastlane.segment import Mapping
from mosaic_sdk.shm.atomics import PythonSharedWords
from mosaic_sdk.shm.segment import shm_unlink

from .legacy_v1 import LegacyWriter

CONFIG = FastLaneConfig(width=5, height=3, channels=3, capacity=3, metadata_size=8)
_SLOT_SIZE = 128  # CONFIG's slot: align64(align8(16 + 45 + 8) + 32)
_EXT = HEADER.size + CONFIG.capacity * _SLOT_SIZE  # the extension block


def header_off(name: str) -> int:
    return offset_of(HEADER_FIELDS, name)


def poke(run_id: str, offset: int, fmt: str, value: int) -> None:
    """Write ``value`` at ``offset`` of the run's segment (as a hostile process would)."""
    with Mapping.open(segment_name(run_id)) as mapping:
        struct.pack_into("<" + fmt, mapping.mmap, offset, value)


def published(run_id: str, frames: int = 1) -> FastLaneWriter:
    writer = FastLaneWriter.create(run_id, CONFIG)
    for i in range(frames):
        writer.publish(
            np.full((3, 5, 3), i + 1, np.uint8), metrics=FastLaneMetrics(i, i, i), metadata=b"m"
        )
    return writer


def slot0(field: str) -> int:
    return HEADER.size + {"seq": 0, "frame_len": 8, "metadata_len": 12}[field]


HEADER_CASES = [
    ("channels", 2, r"says 2 channels \(FastLane has 1, 3 or 4\)"),
    ("channels", 0, r"says 0 channels"),
    ("width", 0, r"a 0x3 frame \(both sides must be >= 1\)"),
    ("height", 0, r"a 5x0 frame"),
    ("width", 1 << 31, r"frame is \d+ bytes but a \d+-byte slot has room for"),
    ("height", 0xFFFFFFFF, r"frame is \d+ bytes but a \d+-byte slot has room for"),
    ("width", 6, r"payload_size 53 is smaller than a 6x3x3 frame \(54 bytes\)"),
    ("capacity", 1 << 20, r"says 1048576 slots of \d+ bytes .* but the segment holds"),
    ("capacity", 0xFFFFFFFF, r"but the segment holds"),
    ("slot_size", 0xFFFFFFF8, r"but the segment holds"),
    ("slot_size", 68, r"slot_size 68 is not a multiple of 8"),
    ("slot_size", 8, r"slot has room for 0 after its header"),
    ("payload_size", 1 << 30, r"payload_size 1073741824 does not fit a \d+-byte slot"),
]


@pytest.mark.parametrize(("field", "value", "message"), HEADER_CASES)
def test_a_corrupt_header_is_refused_with_the_field_named(run_id, field, value, message):
    with published(run_id):
        poke(run_id, header_off(field), "I", value)
        with pytest.raises(FastLaneCorruptError, match=message) as info:
            FastLaneReader.attach(run_id)
    assert "is corrupt" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [(8, r"slot metrics at offset 8, not at an 8-aligned offset in 69\.\."),
     (1 << 20, r"offset 1048576"), (92, r"offset 92")],
)  # fmt: skip
def test_a_corrupt_extension_block_is_refused(run_id, value, message):
    with published(run_id):
        poke(run_id, _EXT + offset_of(EXTENSION_FIELDS, "metrics_offset"), "I", value)
        with pytest.raises(FastLaneCorruptError, match=message):
            FastLaneReader.attach(run_id)


SLOT_CASES = [
    ("frame_len", 10**6, r"a slot holds a 1000000-byte frame but the header's 5x3x3 frames are 45"),
    ("frame_len", 44, r"a slot holds a 44-byte frame"),
    ("frame_len", 0, r"a slot holds a 0-byte frame"),
    ("frame_len", 0xFFFFFFFF, r"a slot holds a 4294967295-byte frame"),
    ("metadata_len", 9, r"a slot claims 9 bytes of metadata but has room for 8"),
    ("metadata_len", 0xFFFFFFFF, r"claims 4294967295 bytes of metadata"),
]

READS: dict[str, Callable[[FastLaneReader], object]] = {
    "latest_frame": lambda r: r.latest_frame(),
    "read_latest_into": lambda r: r.read_latest_into(np.empty(64, np.uint8)),
    "latest_view": lambda r: r.latest_view(),
}


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize(("field", "value", "message"), SLOT_CASES)
def test_a_slot_whose_lengths_do_not_fit_is_refused_by_every_read(
    run_id, read, field, value, message
):
    with published(run_id), FastLaneReader.attach(run_id) as reader:
        assert READS[read](reader) is not None  # the intact slot reads fine
        poke(run_id, slot0(field), "I", value)
        with pytest.raises(FastLaneCorruptError, match=message):
            READS[read](reader)


def test_the_slot_check_runs_with_the_python_atomics_too(run_id):
    with mock.patch.object(segment_module, "SharedWords", PythonSharedWords):
        with published(run_id), FastLaneReader.attach(run_id) as reader:
            assert type(reader._words) is PythonSharedWords
            poke(run_id, slot0("frame_len"), "I", 44)
            for read in READS.values():
                with pytest.raises(FastLaneCorruptError, match="44-byte frame"):
                    read(reader)


def test_a_buffer_too_small_is_the_callers_error_not_corruption(run_id):
    with published(run_id), FastLaneReader.attach(run_id) as reader:
        with pytest.raises(ValueError, match="destination holds 44 bytes") as info:
            reader.read_latest_into(np.empty(44, np.uint8))
        assert not isinstance(info.value, FastLaneCorruptError)


def test_a_slot_being_written_is_still_just_not_ready(run_id):
    """An odd seq (a frame in flight) is what a live writer shows: None, not an error."""
    with published(run_id, frames=1), FastLaneReader.attach(run_id) as reader:
        poke(run_id, slot0("seq"), "Q", 3)  # frame 1 in flight
        poke(run_id, slot0("frame_len"), "I", 10**6)  # half-written lengths
        assert reader.latest_frame() is None and reader.latest_view() is None
        assert reader.retries == 8


def test_a_version1_segment_declaring_more_payload_than_its_slots_hold_stays_readable(run_id):
    legacy = LegacyWriter(run_id, 8, 8, capacity=4)  # slot_size 16 + 192: 8-aligned
    try:
        legacy.publish(bytes(range(192)), metrics=(1.0, 2.0, 3.0))
        # A version-1 writer counts metadata_size in payload_size but not in slot_size.
        struct.pack_into("<I", legacy.buf, header_off("payload_size"), 192 + 64)
        with FastLaneReader.attach(run_id) as reader:
            assert reader.latest_frame().data == bytes(range(192))
            struct.pack_into("<I", legacy.buf, HEADER.size + 12, 1)  # metadata past the slot
            with pytest.raises(
                FastLaneCorruptError, match="1 bytes of metadata but has room for 0"
            ):
                reader.latest_frame()
    finally:
        legacy.shm.unlink()
        legacy.close()


# -- the command line -----------------------------------------------------------------------


def test_snapshot_and_stat_report_a_corrupt_header_in_one_line_with_exit_1(
    run_id, tmp_path, capsys
):
    from mosaic_sdk.cli import main

    with published(run_id):
        poke(run_id, header_off("channels"), "I", 7)
        for argv in (
            ["stat", run_id, "--interval", "0"],
            ["snapshot", run_id, str(tmp_path / "x.png")],
        ):
            assert main(["fastlane", *argv]) == 1
            err = capsys.readouterr().err.strip()
            assert err.startswith("mosaic: error: FastLane segment") and "\n" not in err
            assert "says 7 channels" in err
    assert not (tmp_path / "x.png").exists()


def test_snapshot_reports_a_corrupt_slot_in_one_line_with_exit_1(run_id, tmp_path, capsys):
    from mosaic_sdk.cli import main

    with published(run_id):
        poke(run_id, slot0("frame_len"), "I", 7)
        assert main(["fastlane", "snapshot", run_id, str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err.strip()
    assert "a slot holds a 7-byte frame" in err and "\n" not in err
    assert not (tmp_path / "x.png").exists()


# -- property: any corruption gives a true frame, None, or the documented error -------------


@lru_cache(maxsize=1)
def template() -> bytes:
    """A real writer's segment after 4 frames (the 3-slot ring wrapped), with metadata."""
    rid = f"test-{os.getpid()}-{uuid.uuid4().hex[:10]}"
    try:
        with published(rid, frames=4), Mapping.open(segment_name(rid)) as mapping:
            return bytes(mapping.mmap)
    finally:
        shm_unlink(segment_name(rid))


FIELD_SPOTS = (
    [(f.offset, "Q" if f.code == "Q" else "I") for f in HEADER_FIELDS if f.code in "IQ"]
    + [(HEADER.size + i * _SLOT_SIZE + off, code)
       for i in range(CONFIG.capacity) for off, code in ((0, "Q"), (8, "I"), (12, "I"))]
    + [(_EXT + f.offset, "Q" if f.code == "Q" else "I") for f in EXTENSION_FIELDS if f.code in "IQ"]
)  # fmt: skip
INTERESTING = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    9,
    15,
    16,
    44,
    45,
    46,
    53,
    54,
    64,
    69,
    72,
    128,
    2**31,
    2**32 - 1,
]

field_edit = st.tuples(
    st.just("field"),
    st.sampled_from(FIELD_SPOTS),
    st.one_of(st.sampled_from(INTERESTING), st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1)),
)
SLOT_SPOTS = [spot for spot in FIELD_SPOTS if HEADER.size <= spot[0] < _EXT]
slot_edit = st.tuples(
    st.just("field"),
    st.sampled_from(SLOT_SPOTS),
    st.one_of(st.sampled_from(INTERESTING), st.integers(0, 2**32 - 1)),
)
byte_edit = st.tuples(
    st.just("byte"), st.integers(0, _EXT + EXTENSION.size - 1), st.integers(0, 255)
)
size_edit = st.tuples(st.just("size"), st.integers(HEADER.size, _EXT + EXTENSION.size + 256))


def corrupt(data: bytes, edits: list[tuple]) -> bytes:
    buf = bytearray(data)
    for edit in edits:
        if edit[0] == "field":
            (offset, code), value = edit[1], edit[2]
            mask = (1 << (8 * struct.calcsize(code))) - 1
            struct.pack_into("<" + code, buf, offset, value & mask)
        elif edit[0] == "byte":
            buf[edit[1]] = edit[2]
    sizes = [edit[1] for edit in edits if edit[0] == "size"]
    if sizes:
        size = sizes[-1]
        buf = buf[:size] + bytes(max(0, size - len(buf)))
    return bytes(buf)


@contextmanager
def segment_with(data: bytes) -> Iterator[str]:
    rid = f"test-{os.getpid()}-{uuid.uuid4().hex[:10]}"
    name = segment_name(rid)
    try:
        with Mapping.create(name, len(data)) as mapping:
            mapping.mmap[:] = data
        yield rid
    finally:
        shm_unlink(name)


def check_frame(data: bytes, frame_bytes: bytes, metadata: bytes | None, shape: tuple) -> None:
    """A frame the reader returned is exactly the bytes of the newest slot, inside it."""
    (_, _, _, capacity, slot_size, _, width, height, channels, _, head, *_) = HEADER.unpack_from(
        data
    )
    assert shape == (height, width, channels)
    slot_off = HEADER.size + ((head - 1) % capacity) * slot_size
    seq, flen, mlen = SLOT_HEADER.unpack_from(data, slot_off)
    assert seq == (2 * head + 2) % 2**64
    start = slot_off + SLOT_HEADER.size
    assert flen == width * height * channels == len(frame_bytes)
    assert start + flen + mlen <= slot_off + slot_size <= len(data)
    assert frame_bytes == data[start : start + flen]
    assert (metadata or b"") == data[start + flen : start + flen + mlen]


@pytest.mark.parametrize("atomics", ["native", "python"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.one_of(field_edit, slot_edit, byte_edit, size_edit), min_size=1, max_size=4)
)
def test_any_corruption_gives_the_true_frame_none_or_the_documented_error(atomics, edits):
    data = corrupt(template(), edits)
    patch = (
        mock.patch.object(segment_module, "SharedWords", PythonSharedWords)
        if atomics == "python"
        else nullcontext()
    )
    with patch, segment_with(data) as rid:
        try:
            reader = FastLaneReader.attach(rid)
        except (FastLaneCorruptError, FastLaneUnavailableError) as exc:
            event(f"attach: {type(exc).__name__}")
            return
        with reader:
            shape = (reader.height, reader.width, reader.channels)
            out = np.empty(shape, np.uint8)
            for name, read in (
                ("frame", reader.latest_frame),
                ("into", lambda: reader.read_latest_into(out)),
                ("view", reader.latest_view),
            ):
                try:
                    got = read()
                except FastLaneCorruptError:
                    event(f"{name}: FastLaneCorruptError")
                    continue
                event(f"{name}: {'None' if got is None else 'frame'}")
                if got is None:
                    continue
                if name == "view":
                    assert got.still_valid()
                    check_frame(data, got.array.tobytes(), got.metadata, got.array.shape)
                    del got
                else:
                    pixels = out.tobytes() if name == "into" else got.data
                    check_frame(data, pixels, got.metadata, got.array().shape)
