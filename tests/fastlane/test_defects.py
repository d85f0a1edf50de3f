"""One regression test per FastLane defect of the deployed platform (UPSTREAM.md).

Each shows the old behaviour failing (on a faithful re-implementation in legacy_v1.py) and
ours passing.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.fastlane import (
    FastLaneBusyError,
    FastLaneConfig,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneWriter,
    cleanup_stale_segment,
)
from mosaic_sdk.fastlane.layout import FLAG_INVALIDATED, HEADER, Geometry, segment_name
from mosaic_sdk.fastlane.segment import Mapping, inspect_segment
from mosaic_sdk.shm import atomics

from .legacy_v1 import SLOT, LegacyReader, LegacyWriter

CHILD = str(Path(__file__).with_name("fastlane_child.py"))
DEV_SHM = Path("/dev/shm")


def spawn(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, CHILD, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def frame(k: int, shape=(4, 4, 3)) -> np.ndarray:
    return np.full(shape, k % 251, np.uint8)


# 1. metrics outside the seqlock ------------------------------------------------------------
def test_1_legacy_metrics_can_belong_to_another_frame(run_id):
    legacy = LegacyWriter(run_id, 4, 4, capacity=4)
    try:
        reader = LegacyReader(run_id)
        legacy.publish(frame(1), metrics=(1.0, 1.0, 1.0))
        # the writer publishes frame 2 while the reader is between its copy and its metrics read
        data, metrics = reader.latest_frame(
            after_copy=lambda: legacy.publish(frame(2), metrics=(2.0, 2.0, 2.0))
        )
        assert data == frame(1).tobytes() and metrics == (2.0, 2.0, 2.0)  # pixels 1, metrics 2
        reader.close()
    finally:
        legacy.shm.unlink()
        legacy.close()


def test_1_our_metrics_always_belong_to_the_frame(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)) as writer:
        reader = FastLaneReader.attach(run_id)
        writer.publish(frame(1), metrics=FastLaneMetrics(1, 1, 1))
        view = reader.latest_view()
        writer.publish(frame(2), metrics=FastLaneMetrics(2, 2, 2))
        assert view.metrics == FastLaneMetrics(1, 1, 1) and int(view.array[0, 0, 0]) == 1
        got = reader.latest_frame()
        assert got.metrics == FastLaneMetrics(2, 2, 2) and got.data == frame(2).tobytes()
        # the header copy is still written for version-1 readers
        assert reader.metrics() == FastLaneMetrics(2, 2, 2)
        reader.close()
    # the cross-process version of this check is tests/fastlane/test_stress.py


# 2. memory ordering ----------------------------------------------------------------------
def test_2_native_release_acquire_helper_is_built_and_used():
    if os.environ.get("MOSAIC_ATOMICS", "").lower() == "python":
        pytest.skip("MOSAIC_ATOMICS=python forces the fallback")
    assert atomics.IMPLEMENTATION == "native", "the C helper should be built on this machine"


def test_2_python_fallback_refuses_hardware_that_reorders_stores(monkeypatch):
    monkeypatch.setattr(atomics, "IMPLEMENTATION", "python")
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    with pytest.raises(atomics.AtomicsUnavailableError, match="reorder"):
        atomics.SharedWords(bytearray(64))


def test_2_native_and_fallback_write_and_read_the_same_bytes():
    if atomics.IMPLEMENTATION != "native":
        pytest.skip("needs the native helper")
    g = Geometry(5, 3, 3, 7, 4)
    bufs = [bytearray(g.segment_size) for _ in range(2)]
    # bytearray memory is 8-aligned for these sizes on CPython
    impls = [atomics.SharedWords(bufs[0]), atomics.PythonSharedWords(bufs[1])]
    data = bytes(range(45))
    for words in impls:
        slot = g.slot_offset(1)
        words.fastlane_write(
            slot, 2, data, b"meta", g.payload_size, slot + g.metrics_offset, 1.5, -2.5, 60.0, 56, 40
        )
    a, b = bufs
    ns = g.slot_offset(1) + g.metrics_offset + 24  # publish time differs; everything else equal
    assert a[:ns] == b[:ns] and a[ns + 8 :] == b[ns + 8 :]
    for words in impls:
        slot = g.slot_offset(1)
        got = words.fastlane_read(slot, 2, slot + g.metrics_offset, g.payload_size)
        assert got[:5] == (data, b"meta", 1.5, -2.5, 60.0)
        assert words.fastlane_read(slot, 3, slot + g.metrics_offset, g.payload_size) is None
        words.release()


# 3. whole-header rewrites ----------------------------------------------------------------
def test_3_legacy_header_rewrite_loses_a_concurrent_flag(run_id):
    legacy = LegacyWriter(run_id, 4, 4, capacity=4)
    try:

        def other_process_sets_the_flag():
            flags = HEADER.unpack_from(legacy.buf, 0)[2]
            legacy.buf[8:12] = (flags | FLAG_INVALIDATED).to_bytes(4, "little")

        legacy.publish(frame(1), between=other_process_sets_the_flag)
        assert HEADER.unpack_from(legacy.buf, 0)[2] & FLAG_INVALIDATED == 0  # lost
    finally:
        legacy.shm.unlink()
        legacy.close()


def test_3_publish_touches_only_head_and_hud_words(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)) as writer:
        with Mapping.open(writer.name) as other:
            before = bytes(other.mmap[:80])
            other.words.fetch_or_u32(8, 0x10)  # another process sets a flag bit
            writer.publish(frame(1), metrics=FastLaneMetrics(3, 4, 5))
            after = bytes(other.mmap[:80])
            assert HEADER.unpack_from(after)[2] & 0x10  # kept
            changed = {i for i in range(80) if before[i] != after[i]}
            allowed = set(range(8, 12)) | set(range(40, 48)) | set(range(56, 80))
            assert changed <= allowed
            assert 40 % 8 == 0 and all(off % 8 == 0 for off in (56, 64, 72))


# 4. a second writer / a change of frame size ----------------------------------------------
def test_4_legacy_second_writer_with_larger_frame_leaves_a_stuck_slot(run_id):
    first = LegacyWriter(run_id, 4, 4, capacity=4)
    try:
        second = LegacyWriter(run_id, 64, 64, capacity=4)  # attaches, rewrites the geometry
        with pytest.raises(ValueError):
            second.publish(frame(1, (64, 64, 3)))
        seq = SLOT.unpack_from(first.buf, 80)[0]
        assert seq % 2 == 1  # stuck "in flight" forever
        second.close()
    finally:
        first.shm.unlink()
        first.close()


def test_4_second_writer_is_refused_and_size_changes_start_a_generation(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)) as writer:
        with pytest.raises(FastLaneBusyError, match=f"pid {os.getpid()}"):
            FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8))
        reader = FastLaneReader.attach(run_id)
        writer.publish(frame(1, (8, 8, 3)))
        got = reader.latest_frame()
        assert (got.width, got.generation) == (8, 2) and got.data == frame(1, (8, 8, 3)).tobytes()
        reader.close()


# 5. the resource tracker ---------------------------------------------------------------
def test_5_legacy_attach_lets_an_exiting_reader_unlink_the_live_segment(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)) as writer:
        writer.publish(frame(1))
        child = spawn("legacy-attach", run_id)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0 and "READ" in out, err
        if sys.version_info < (3, 13):
            assert not (DEV_SHM / writer.name).exists()  # the writer's segment is gone
            assert "resource_tracker" in err


def test_5_our_reader_exits_and_the_segment_stays(run_id):
    with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4)) as writer:
        writer.publish(frame(1))
        for _ in range(2):
            child = spawn("attach", run_id)
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0 and "READ" in out, err
            assert "resource_tracker" not in err and "leaked" not in err
        assert (DEV_SHM / writer.name).exists()
        with FastLaneReader.attach(run_id) as reader:
            assert reader.latest_frame().data == frame(1).tobytes()


# 6. stale segments of dead writers --------------------------------------------------------
def test_6_legacy_writer_silently_reuses_a_stale_segment(run_id):
    dead = LegacyWriter(run_id, 4, 4, capacity=4)
    dead.publish(frame(1))
    dead.publish(frame(2))
    try:
        inode = os.stat(DEV_SHM / dead.shm.name.lstrip("/")).st_ino
        reused = LegacyWriter(run_id, 4, 4, capacity=4)  # no error, no owner check
        assert os.stat(DEV_SHM / reused.shm.name.lstrip("/")).st_ino == inode  # same segment
        slot1 = 80 + reused.slot_size + 16
        assert bytes(reused.buf[slot1 : slot1 + 48]) == frame(2).tobytes()  # dead run's pixels
        reused.close()
    finally:
        dead.shm.unlink()
        dead.close()


def test_6_sigkilled_writer_is_detected_cleaned_and_replaced(run_id, make_run_id):
    child = spawn("hold", run_id)
    try:
        assert child.stdout.readline().strip() == "READY"
        name = segment_name(run_id)
        status = inspect_segment(name)
        assert status.writer_pid == child.pid and status.writer_alive and status.generation == 1
        assert cleanup_stale_segment(run_id) is False  # alive: left alone
        reader = FastLaneReader.attach(run_id)
        assert reader.latest_frame().metrics == FastLaneMetrics(5.0, -5.0, 2.5)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    assert (DEV_SHM / name).exists()  # SIGKILL ran no clean-up code
    assert inspect_segment(name).stale
    # a new writer replaces it instead of reusing it, and the old reader follows
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)) as writer:
        writer.publish(frame(7, (2, 2, 3)), metrics=FastLaneMetrics(7, 7, 7))
        got = reader.latest_frame()
        assert got.metrics == FastLaneMetrics(7, 7, 7) and got.width == 2
        assert reader.status().writer_pid == os.getpid()
    reader.close()


def test_6_cleanup_removes_the_segment_of_a_sigkilled_writer(run_id):
    child = spawn("hold", run_id)
    try:
        assert child.stdout.readline().strip() == "READY"
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    name = segment_name(run_id)
    assert (DEV_SHM / name).exists()
    assert cleanup_stale_segment(run_id) is True
    assert not (DEV_SHM / name).exists()
    assert cleanup_stale_segment(run_id) is False  # idempotent


def test_6_cleanup_removes_a_zombie_writers_segment(run_id):
    child = spawn("hold", run_id)
    assert child.stdout.readline().strip() == "READY"
    child.send_signal(signal.SIGKILL)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead but not reaped: a zombie
    try:
        assert cleanup_stale_segment(run_id) is True
    finally:
        child.communicate(timeout=60)


# 7 and 8. alignment and capacity ------------------------------------------------------------
def test_7_and_8_aligned_slots_and_memory_of_a_64_env_grid():
    legacy_slot = 16 + 5 * 3 * 3
    assert legacy_slot % 8 != 0  # deployed: seq words of slots 1.. misaligned
    grid = FastLaneConfig(width=8 * 256, height=8 * 256)  # 64 envs of 256x256 tiled 8x8
    ours = Geometry(grid.width, grid.height, 3, 0, grid.capacity)
    deployed = 80 + 128 * (16 + grid.frame_bytes)
    assert deployed > 1.5e9 and ours.segment_size < 55e6
    assert ours.slot_size % 64 == 0


# 9. one-channel frames ---------------------------------------------------------------------
def test_9_gray_frames_are_one_channel_end_to_end(run_id):
    gray = np.arange(6 * 10, dtype=np.uint8).reshape(6, 10)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=10, height=6, channels=1)) as w:
        w.publish(gray)
        with FastLaneReader.attach(run_id) as reader:
            got = reader.latest_frame()
            assert got.channels == 1 and len(got.data) == 60
            np.testing.assert_array_equal(got.array()[:, :, 0], gray)


def test_9_legacy_consumer_reads_gray_frames_out_of_bounds():
    def legacy_bytes_needed(width: int, height: int, channels: int) -> int:
        # the deployed consumer: Format_RGB888 for 3 channels, Format_RGBA8888 otherwise
        return width * height * (3 if channels == 3 else 4)

    assert legacy_bytes_needed(10, 6, 1) > 10 * 6 * 1  # reads 4x past the gray frame


def test_9_gray_snapshot_is_a_one_channel_png(run_id, tmp_path):
    from mosaic_sdk.fastlane.snapshot import write_snapshot

    gray = np.arange(60, dtype=np.uint8).reshape(6, 10, 1)
    path = write_snapshot(tmp_path / "g.png", gray, FastLaneMetrics())
    data = path.read_bytes()
    assert data[25] == 0  # IHDR colour type 0: grayscale, one byte per pixel
