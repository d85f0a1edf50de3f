"""The reader's one-call native read (``SharedWords.fastlane_cursor``) and the slotted records.

With the C helper, ``FastLaneReader.latest_frame`` and ``read_latest_into`` are the cursor's
methods: one call checks the flags, loads head, copies the slot under the seqlock and builds
the finished ``FastLaneFrame``. Every other case goes to the Python path. These tests hold the
two paths to the same answers, and the records to their public API.
"""

from __future__ import annotations

import dataclasses
import gc
import struct
import threading
import time
from unittest import mock

import numpy as np
import pytest

from mosaic_sdk.fastlane import (
    FastLaneConfig,
    FastLaneError,
    FastLaneFrame,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneWriter,
)
from mosaic_sdk.fastlane import segment as segment_module
from mosaic_sdk.fastlane.layout import HEADER, segment_name
from mosaic_sdk.fastlane.records import make_frame, make_metrics
from mosaic_sdk.fastlane.segment import Mapping
from mosaic_sdk.shm import atomics
from mosaic_sdk.shm.atomics import PythonSharedWords

from .legacy_v1 import LegacyWriter

native = pytest.mark.skipif(
    atomics.IMPLEMENTATION != "native", reason="needs the native helper (MOSAIC_ATOMICS=python)"
)

CONFIG = FastLaneConfig(width=6, height=4, channels=3, capacity=3, metadata_size=16)


def pattern(k: int) -> np.ndarray:
    return np.full((4, 6, 3), k % 251, np.uint8)


def python_read(reader: FastLaneReader, out: np.ndarray | None = None) -> FastLaneFrame | None:
    """The class's methods: the Python path, whatever the instance has bound."""
    if out is None:
        return FastLaneReader.latest_frame(reader)
    return FastLaneReader.read_latest_into(reader, out)


# -- the records ---------------------------------------------------------------------------


def test_the_records_keep_their_public_api():
    metrics = FastLaneMetrics(1.5, -2.0, 60.0)
    frame = FastLaneFrame(b"\x01" * 24, 6, 4, 1, metrics, b"meta", 7, 2)
    assert [f.name for f in dataclasses.fields(FastLaneFrame)] == [
        "data",
        "width",
        "height",
        "channels",
        "metrics",
        "metadata",
        "seq",
        "generation",
    ]
    assert FastLaneFrame(b"x", 1, 1, 1, FastLaneMetrics()).metadata is None  # defaults kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.seq = 8  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        metrics.last_reward = 0.0  # type: ignore[misc]
    assert dataclasses.replace(frame, seq=8).seq == 8
    assert frame == FastLaneFrame(
        b"\x01" * 24, 6, 4, 1, FastLaneMetrics(1.5, -2.0, 60.0), b"meta", 7, 2
    )
    assert hash(frame) == hash(dataclasses.replace(frame))
    assert frame.array().shape == (4, 6, 1)
    assert metrics.hud_text().splitlines()[0] == "reward: 1.50"
    assert "seq=7" in repr(frame)


def test_make_frame_and_make_metrics_build_the_same_records_as_the_constructors():
    m = make_metrics(1.0, 2.0, 3.0)
    assert m == FastLaneMetrics(1.0, 2.0, 3.0) and type(m) is FastLaneMetrics
    f = make_frame(b"ab", 2, 1, 1, m, None, 5, 1)
    assert f == FastLaneFrame(b"ab", 2, 1, 1, FastLaneMetrics(1.0, 2.0, 3.0), None, 5, 1)


# -- the native read is the Python read, faster ---------------------------------------------


@native
@pytest.mark.parametrize("metadata", [None, b"", b"meta-42"])
def test_the_native_read_returns_what_the_python_path_returns(run_id, metadata):
    with FastLaneWriter.create(run_id, CONFIG) as writer, FastLaneReader.attach(run_id) as reader:
        assert type(reader.latest_frame).__name__ == "builtin_function_or_method"
        for k in range(1, 6):  # wraps the 3-slot ring
            writer.publish(pattern(k), metrics=FastLaneMetrics(k, -k, k / 2), metadata=metadata)
            got, want = reader.latest_frame(), python_read(reader)
            assert type(got) is FastLaneFrame and type(got.metrics) is FastLaneMetrics
            assert got == want
            assert got.data == pattern(k).tobytes() and got.seq == k
            assert got.metrics == FastLaneMetrics(k, -k, k / 2)
            assert got.metadata == (metadata or None)
            assert (got.width, got.height, got.channels) == (6, 4, 3)
            assert got.generation == reader.generation
            out, out2 = np.empty((4, 6, 3), np.uint8), np.empty((4, 6, 3), np.uint8)
            into, into2 = reader.read_latest_into(out), python_read(reader, out2)
            assert into.data is out and into2.data is out2 and (out == pattern(k)).all()
            assert dataclasses.replace(into, data=None) == dataclasses.replace(into2, data=None)


@native
def test_the_native_read_of_a_version1_segment_takes_the_header_metrics(run_id):
    legacy = LegacyWriter(run_id, 8, 8, capacity=4)
    try:
        with FastLaneReader.attach(run_id) as reader:
            assert reader.latest_frame() is None  # nothing published: the Python path says so
            legacy.publish(bytes(range(192)), metrics=(1.0, 2.0, 3.0))
            got = reader.latest_frame()
            assert got == python_read(reader)
            assert got.data == bytes(range(192)) and got.metrics == FastLaneMetrics(1, 2, 3)
            assert got.generation == 0 and got.metadata is None
    finally:
        legacy.shm.unlink()
        legacy.close()


@native
def test_frames_of_our_own_bytes_stay_out_of_the_collector_and_the_callers_array_does_not(
    run_id,
):
    """The native read untracks a frame only when every value in it is atomic."""
    with FastLaneWriter.create(run_id, CONFIG) as writer, FastLaneReader.attach(run_id) as reader:
        writer.publish(pattern(1), metadata=b"m")
        frame = reader.latest_frame()
        assert not gc.is_tracked(frame) and not gc.is_tracked(frame.metrics)
        into = reader.read_latest_into(np.empty((4, 6, 3), np.uint8))
        assert gc.is_tracked(into)


# -- every other case goes to the Python path ------------------------------------------------


@native
def test_a_slot_in_flight_counts_one_retry_per_try_as_before(run_id):
    with FastLaneWriter.create(run_id, CONFIG) as writer, FastLaneReader.attach(run_id) as reader:
        writer.publish(pattern(1))
        with Mapping.open(segment_name(run_id)) as mapping:
            struct.pack_into("<Q", mapping.mmap, HEADER.size, 3)  # frame 1 in flight
        assert reader.latest_frame() is None and reader.retries == 4
        assert reader.read_latest_into(np.empty(72, np.uint8)) is None and reader.retries == 8


@native
def test_a_method_bound_before_the_ring_was_recreated_reads_the_new_ring(run_id):
    writer = FastLaneWriter.create(run_id, CONFIG)
    reader = FastLaneReader.attach(run_id)
    try:
        old_bound = reader.latest_frame
        writer.publish(pattern(1))
        writer.close()  # sets FLAG_INVALIDATED
        with FastLaneWriter.create(run_id, CONFIG) as again:
            again.publish(pattern(9), metrics=FastLaneMetrics(9, 9, 9))
            got = old_bound()
            assert got.data == pattern(9).tobytes() and got.metrics == FastLaneMetrics(9, 9, 9)
            assert reader.reattachments == 1
            assert reader.latest_frame() == got  # the new ring's cursor
            assert reader.latest_frame is not old_bound
    finally:
        reader.close()


def test_a_closed_reader_says_so_through_any_method_it_handed_out(run_id):
    with FastLaneWriter.create(run_id, CONFIG) as writer:
        writer.publish(pattern(1))
        reader = FastLaneReader.attach(run_id)
        bound, bound_into = reader.latest_frame, reader.read_latest_into
        reader.close()
        for read in (
            reader.latest_frame,
            bound,
            lambda: bound_into(np.empty(72, np.uint8)),
            lambda: reader.read_latest_into(np.empty(72, np.uint8)),
        ):
            with pytest.raises(FastLaneError, match="is closed"):
                read()


@native
@pytest.mark.parametrize(
    ("dest", "error", "match"),
    [
        (np.empty(10, np.uint8), ValueError, "destination holds 10 bytes"),
        (b"x" * 100, BufferError, "not writable"),
    ],
    ids=["too-small", "read-only"],
)
def test_a_destination_that_does_not_fit_gets_the_python_paths_error(run_id, dest, error, match):
    with FastLaneWriter.create(run_id, CONFIG) as writer, FastLaneReader.attach(run_id) as reader:
        writer.publish(pattern(1))
        for read in (reader.read_latest_into, lambda d: python_read(reader, d)):
            with pytest.raises(error, match=match):
                read(dest)


# -- the cursor itself -----------------------------------------------------------------------


@native
def test_the_cursor_refuses_a_geometry_outside_its_buffer_and_records_without_slots():
    words = atomics.SharedWords(bytearray(80 + 2 * 64))

    def cursor(capacity=2, slot_size=64, frame_bytes=8, payload=8, metrics_off=32, types=None):
        frame_type, metrics_type = types or (FastLaneFrame, FastLaneMetrics)
        return words.fastlane_cursor(
            capacity,
            slot_size,
            frame_bytes,
            payload,
            metrics_off,
            2,
            2,
            2,
            1,
            frame_type,
            metrics_type,
            lambda dest, tried: ("slow", tried),
        )

    try:
        assert cursor().latest_frame() == ("slow", 0)  # head 0: nothing published
        for bad in (
            {"capacity": 3},
            {"slot_size": 60},
            {"payload": 64},
            {"metrics_off": 40},
            {"metrics_off": 36},
            {"frame_bytes": 9},
        ):
            with pytest.raises(IndexError, match="geometry does not fit"):
                cursor(**bad)

        @dataclasses.dataclass(frozen=True)
        class WithDict:
            data: object = None

        with pytest.raises(TypeError, match="not a __slots__ member"):
            cursor(types=(WithDict, FastLaneMetrics))
        with pytest.raises(AttributeError):
            cursor(types=(FastLaneMetrics, FastLaneMetrics))
    finally:
        words.release()


@native
def test_the_cursor_hands_a_slot_not_ready_to_slow_with_one_try_spent():
    buf = bytearray(80 + 2 * 64)
    words = atomics.SharedWords(buf)
    calls = []
    cursor = words.fastlane_cursor(
        2,
        64,
        8,
        8,
        32,
        2,
        2,
        2,
        1,
        FastLaneFrame,
        FastLaneMetrics,
        lambda dest, tried: calls.append((dest, tried)),
    )
    try:
        struct.pack_into("<Q", buf, 40, 1)  # head 1, slot 0 never written (seq 0)
        assert cursor.latest_frame() is None and calls == [(None, 1)]
        struct.pack_into("<QII8s", buf, 80, 4, 8, 0, b"abcdefgh")  # frame 1, complete
        struct.pack_into("<ddd", buf, 80 + 32, 1.0, 2.0, 3.0)
        frame = cursor.latest_frame()
        assert frame == FastLaneFrame(b"abcdefgh", 2, 2, 2, FastLaneMetrics(1, 2, 3), None, 1, 1)
        struct.pack_into("<I", buf, 8, 1)  # FLAG_INVALIDATED
        assert cursor.latest_frame() is None and calls[-1] == (None, 0)
    finally:
        words.release()
    assert cursor.latest_frame() is None and calls[-1] == (None, 0)  # released: slow decides


# -- the fallback ----------------------------------------------------------------------------


def test_the_python_atomics_keep_the_class_methods_and_read_the_same_frames(run_id):
    with mock.patch.object(segment_module, "SharedWords", PythonSharedWords):
        with (
            FastLaneWriter.create(run_id, CONFIG) as writer,
            FastLaneReader.attach(run_id) as reader,
        ):
            assert "latest_frame" not in vars(reader)
            writer.publish(pattern(3), metrics=FastLaneMetrics(3, 2, 1), metadata=b"py")
            got = reader.latest_frame()
            assert got == FastLaneFrame(
                pattern(3).tobytes(), 6, 4, 3, FastLaneMetrics(3, 2, 1), b"py", 1, reader.generation
            )
            out = np.empty((4, 6, 3), np.uint8)
            assert reader.read_latest_into(out).data is out and (out == pattern(3)).all()


# -- torn reads ------------------------------------------------------------------------------


def test_no_torn_frame_while_a_writer_thread_rewrites_the_slots(run_id):
    """Frames of 1 MiB: the writer's and the reader's copies release the GIL, so the two
    threads really overlap; every frame read must be one frame, with its own metrics."""
    big = FastLaneConfig(width=512, height=512, channels=4, capacity=2)
    stop = threading.Event()
    with FastLaneWriter.create(run_id, big) as writer, FastLaneReader.attach(run_id) as reader:
        frames = [np.full((512, 512, 4), k, np.uint8) for k in range(1, 9)]

        def write() -> None:
            k = 0
            while not stop.is_set():
                k += 1
                v = k % 8 + 1
                writer.publish(frames[v - 1], metrics=FastLaneMetrics(v, -v, 2 * v))
                if k % 4 == 0:
                    time.sleep(0.0002)  # let some reads find a complete slot

        thread = threading.Thread(target=write)
        thread.start()
        reads = tries = 0
        out = np.empty((512, 512, 4), np.uint8)
        deadline = time.monotonic() + 10
        try:
            while reads < 100 and time.monotonic() < deadline:
                tries += 1
                frame = reader.latest_frame() if tries % 2 else reader.read_latest_into(out)
                if frame is None:
                    continue
                reads += 1
                arr = frame.array()
                v = int(arr[0, 0, 0])
                assert (arr == v).all(), "a torn frame"
                assert frame.metrics == FastLaneMetrics(v, -v, 2 * v), "another frame's metrics"
        finally:
            stop.set()
            thread.join()
        assert reads > 0
