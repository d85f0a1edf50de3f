"""A reader written only from UPSTREAM.md's version-1 table reads what we write."""

from __future__ import annotations

import numpy as np
import pytest

from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneReader, FastLaneWriter

from .legacy_v1 import LegacyWriter
from .v1_reader import V1Reader


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_v1_reader_reads_frames_dims_and_header_metrics(run_id, channels):
    config = FastLaneConfig(width=13, height=7, channels=channels, metadata_size=16)
    rng = np.random.default_rng(channels)
    with FastLaneWriter.create(run_id, config) as writer:
        v1 = V1Reader(run_id)
        assert v1.latest_frame() is None
        for i in range(1, 7):  # wraps around the 4 slots
            frame = rng.integers(0, 256, (7, 13, channels), dtype=np.uint8)
            writer.publish(frame, metrics=FastLaneMetrics(i, 2 * i, 3 * i), metadata=b"m%d" % i)
            got = v1.latest_frame()
            assert got is not None
            assert got["data"] == frame.tobytes() and got["metadata"] == b"m%d" % i
            assert (got["width"], got["height"], got["channels"]) == (13, 7, channels)
            assert got["fmt_ok"]
            assert got["metrics"] == (i, 2 * i, 3 * i)
            assert got["seq"] == 2 * i + 2
            h = v1.header()
            assert h["magic"] == b"FLAN" and h["version"] == 1 and h["tail"] == 0
        v1.close()


def test_v1_reader_reattaches_to_a_new_generation(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)) as writer:
        v1 = V1Reader(run_id)
        writer.publish(np.zeros((4, 4, 3), np.uint8))
        writer.publish(np.ones((6, 9, 3), np.uint8))  # re-created ring
        assert v1.header()["flags"] & 1  # the deployed reader's cue to re-attach
        assert v1.latest_frame() is None
        v1.close()
        v1 = V1Reader(run_id)
        got = v1.latest_frame()
        assert (got["width"], got["height"]) == (9, 6) and got["data"] == b"\x01" * 162
        v1.close()


def test_our_reader_reads_a_version1_writers_segment(run_id):
    legacy = LegacyWriter(run_id, 8, 8, capacity=8)  # 16 + 192 bytes per slot: 8-aligned
    try:
        legacy.publish(bytes(range(192)), metrics=(1.0, 2.0, 3.0))
        with FastLaneReader.attach(run_id) as reader:
            got = reader.latest_frame()
            assert got.data == bytes(range(192)) and got.metrics == FastLaneMetrics(1, 2, 3)
            assert reader.generation == 0 and not reader.status().has_extension
    finally:
        legacy.shm.unlink()
        legacy.close()
