"""The frame ring: publish/read round trips, shapes, inputs, generations, zero-copy views."""

from __future__ import annotations

import numpy as np
import pytest

from mosaic_sdk.fastlane import (
    FastLaneBusyError,
    FastLaneConfig,
    FastLaneError,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneUnavailableError,
    FastLaneWriter,
    create_fastlane_name,
)
from mosaic_sdk.fastlane.layout import DEFAULT_CAPACITY, HEADER, fmt_hash
from mosaic_sdk.fastlane.segment import Mapping, read_status


def frame_of(h: int, w: int, c: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def test_round_trip_returns_the_frame_with_its_metrics(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=84, height=84)) as writer:
        with FastLaneReader.attach(run_id) as reader:
            assert reader.latest_frame() is None  # nothing published yet
            for i in range(1, 10):
                frame = frame_of(84, 84, 3, i)
                metrics = FastLaneMetrics(i * 1.5, -i, 60.0 + i)
                assert writer.publish(frame, metrics=metrics) == i
                got = reader.latest_frame()
                assert got is not None
                assert got.data == frame.tobytes()
                assert got.metrics == metrics
                assert (got.width, got.height, got.channels, got.seq) == (84, 84, 3, i)
                np.testing.assert_array_equal(got.array(), frame)


def test_name_matches_the_deployed_spelling():
    assert create_fastlane_name("runs/abc") == "mosaic.fastlane.runs_abc"
    with pytest.raises(ValueError, match="non-empty"):
        create_fastlane_name("")


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_channels_end_to_end(run_id, channels):
    config = FastLaneConfig(width=17, height=9, channels=channels)
    assert config.pixel_format == {1: "GRAY", 3: "RGB", 4: "RGBA"}[channels]
    frame = frame_of(9, 17, channels, channels)
    with FastLaneWriter.create(run_id, config) as writer, FastLaneReader.attach(run_id) as reader:
        writer.publish(frame[:, :, 0] if channels == 1 else frame)  # HxW accepted for gray
        assert writer.generation == 1  # HxW for a 1-channel ring is not a shape change
        got = reader.latest_frame()
        assert got is not None and got.channels == channels
        np.testing.assert_array_equal(got.array(), frame)
        with Mapping.open(writer.name) as m:
            assert HEADER.unpack_from(m.mmap, 0)[9] == fmt_hash(config.pixel_format)


def test_bytes_memoryview_and_noncontiguous_inputs(run_id):
    frame = frame_of(6, 8, 3, 1)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=6)) as writer:
        reader = FastLaneReader.attach(run_id)
        writer.publish(frame.tobytes())
        assert reader.latest_frame().data == frame.tobytes()
        writer.publish(memoryview(frame))
        assert reader.latest_frame().data == frame.tobytes()
        wide = frame_of(6, 16, 3, 2)
        writer.publish(wide[:, ::2])  # a strided view is copied to contiguous first
        assert reader.latest_frame().data == np.ascontiguousarray(wide[:, ::2]).tobytes()
        with pytest.raises(ValueError, match="expects 144 "):
            writer.publish(b"\x00" * 10)
        with pytest.raises(TypeError, match="uint8"):
            writer.publish(frame.astype(np.float32))
        reader.close()


def test_metadata_travels_with_the_frame(run_id):
    config = FastLaneConfig(width=4, height=4, metadata_size=32)
    with FastLaneWriter.create(run_id, config) as writer, FastLaneReader.attach(run_id) as reader:
        writer.publish(frame_of(4, 4, 3, 0), metadata=b'{"episode": 3}')
        assert reader.latest_frame().metadata == b'{"episode": 3}'
        writer.publish(frame_of(4, 4, 3, 1))
        assert reader.latest_frame().metadata is None
        with pytest.raises(ValueError, match="metadata_size"):
            writer.publish(frame_of(4, 4, 3, 1), metadata=b"x" * 33)


def test_metrics_none_repeats_the_previous_metrics(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)) as writer:
        reader = FastLaneReader.attach(run_id)
        writer.publish(frame_of(2, 2, 3, 0))
        assert reader.latest_frame().metrics == FastLaneMetrics(0.0, 0.0, 0.0)
        writer.publish(frame_of(2, 2, 3, 0), metrics=FastLaneMetrics(1, 2, 3))
        writer.publish(frame_of(2, 2, 3, 0))
        assert reader.latest_frame().metrics == FastLaneMetrics(1, 2, 3)
        reader.close()


def test_read_latest_into_a_preallocated_array(run_id):
    frame = frame_of(10, 12, 3, 5)
    out = np.empty((10, 12, 3), np.uint8)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=12, height=10)) as writer:
        with FastLaneReader.attach(run_id) as reader:
            writer.publish(frame, metrics=FastLaneMetrics(4, 5, 6))
            got = reader.read_latest_into(out)
            assert got.data is out and got.metrics == FastLaneMetrics(4, 5, 6)
            np.testing.assert_array_equal(out, frame)
            with pytest.raises(ValueError, match="destination holds"):
                reader.read_latest_into(np.empty(10, np.uint8))


def test_zero_copy_view_knows_when_it_was_overwritten(run_id):
    config = FastLaneConfig(width=32, height=16, capacity=2)
    with FastLaneWriter.create(run_id, config) as writer, FastLaneReader.attach(run_id) as reader:
        assert reader.latest_view() is None
        first = frame_of(16, 32, 3, 1)
        writer.publish(first, metrics=FastLaneMetrics(1, 1, 1))
        view = reader.latest_view()
        assert view.metrics == FastLaneMetrics(1, 1, 1) and view.seq == 1
        np.testing.assert_array_equal(view.array, first)
        assert not view.array.flags.writeable
        assert view.still_valid()
        writer.publish(frame_of(16, 32, 3, 2))  # other slot: the view is still good
        assert view.still_valid()
        writer.publish(frame_of(16, 32, 3, 3))  # reuses the view's slot
        assert not view.still_valid()
        latest = reader.latest_view()
        assert latest.seq == 3
        reader.close()
        assert not latest.still_valid()  # a closed reader's views are never trusted


def test_default_capacity_is_small_and_slots_are_aligned(run_id):
    config = FastLaneConfig(width=5, height=3)  # 45-byte frames: unaligned in version 1
    assert config.capacity == DEFAULT_CAPACITY == 4
    with FastLaneWriter.create(run_id, config) as writer, Mapping.open(writer.name) as m:
        status = read_status(m)
        assert status.capacity == 4
        assert status.slot_size % 64 == 0
        for i in range(status.capacity):
            assert (HEADER.size + i * status.slot_size) % 8 == 0
        assert status.metrics_offset % 8 == 0 and status.metrics_offset >= 16 + 45


def test_frame_size_change_recreates_the_ring_and_the_reader_follows(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8)) as writer:
        reader = FastLaneReader.attach(run_id)
        writer.publish(frame_of(8, 8, 3, 0), metrics=FastLaneMetrics(1, 0, 0))
        assert reader.latest_frame().generation == 1
        bigger = frame_of(12, 20, 3, 1)  # the next curriculum stage renders larger
        assert writer.publish(bigger, metrics=FastLaneMetrics(2, 0, 0)) == 1
        assert writer.generation == 2 and writer.config.shape == (12, 20, 3)
        got = reader.latest_frame()
        assert (got.width, got.height, got.generation) == (20, 12, 2)
        assert got.metrics == FastLaneMetrics(2, 0, 0)
        np.testing.assert_array_equal(got.array(), bigger)
        gray = frame_of(5, 5, 1, 2)[:, :, 0]
        writer.publish(gray)
        got = reader.latest_frame()
        assert (got.channels, got.generation) == (1, 3)
        assert reader.reattachments == 2
        reader.close()


def test_closed_writer_invalidates_and_reader_reports_none(run_id):
    writer = FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2))
    reader = FastLaneReader.attach(run_id)
    writer.publish(frame_of(2, 2, 3, 0))
    writer.close()
    writer.unlink()
    assert reader.latest_frame() is None
    with pytest.raises(FastLaneError, match="closed"):
        writer.publish(frame_of(2, 2, 3, 0))
    with pytest.raises(FastLaneUnavailableError, match="no FastLane segment"):
        FastLaneReader.attach(run_id)
    # a new writer of the same run is picked up by the old reader
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)) as again:
        again.publish(frame_of(2, 2, 3, 9), metrics=FastLaneMetrics(9, 9, 9))
        assert reader.latest_frame().metrics == FastLaneMetrics(9, 9, 9)
    reader.close()


def test_second_live_writer_is_refused(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)):
        with pytest.raises(FastLaneBusyError, match="live writer"):
            FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"width": 0, "height": 4}, "width"),
        ({"width": 4, "height": 4, "channels": 2}, "channels"),
        ({"width": 4, "height": 4, "channels": 3, "pixel_format": "GRAY"}, "pixel_format"),
        ({"width": 4, "height": 4, "capacity": 1}, "capacity"),
        ({"width": 4, "height": 4, "metadata_size": -1}, "metadata_size"),
    ],
)
def test_bad_config_is_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FastLaneConfig(**kwargs)


def test_closed_reader_raises_instead_of_reattaching(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)) as writer:
        reader = FastLaneReader.attach(run_id)
        writer.publish(frame_of(2, 2, 3, 0))
        reader.close()
        with pytest.raises(FastLaneError, match="closed"):
            reader.latest_frame()
        with pytest.raises(FastLaneError, match="closed"):
            reader.latest_view()


def test_forked_child_exit_does_not_remove_the_parents_segment(run_id):
    import os

    writer = FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2))
    try:
        pid = os.fork()
        if pid == 0:  # child: drop the inherited writer the way an exiting interpreter would
            try:
                writer.unlink()
                writer.close()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        writer.publish(frame_of(2, 2, 3, 1))
        with FastLaneReader.attach(run_id) as reader:  # still there, not invalidated
            assert reader.latest_frame() is not None
    finally:
        writer.unlink()
        writer.close()
