"""Nothing a reader of a FastLane segment does kills the writer's process (issue 47).

The writer runs in a child process (``publisher_child.py``: FramePump, what the wrappers use);
the reader is the platform GUI's sequence of actions (``platform_reader.py``, another child)
or this test process acting on the segment directly (shrinking it, replacing its name). Every
test asserts the writer exits normally, never by a signal, and goes on publishing frames a
reader can read, or stops publishing with a warning.
"""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.fastlane.layout import HEADER, MAGIC, segment_name
from mosaic_sdk.fastlane.segment import SegmentStatus, inspect_segment
from mosaic_sdk.fastlane.writer import MAX_SHRINKS
from mosaic_sdk.shm.segment import shm_open, shm_unlink
from tests.conftest import returns

HERE = Path(__file__).parent
PUBLISHER = str(HERE / "publisher_child.py")
PLATFORM_READER = str(HERE / "platform_reader.py")
LIMIT = 60.0


class Publisher:
    """A publisher child: started, then ended by closing its stdin."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, PUBLISHER, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self) -> None:
        line = returns(self.proc.stdout.readline, LIMIT)  # type: ignore[union-attr]
        assert line.strip() == "READY", self.finish_anyhow()

    def finish(self) -> tuple[dict[str, Any], str]:
        """Close its stdin; its JSON result and stderr once it exited normally (rc 0)."""
        out, err = returns(lambda: self.proc.communicate(), LIMIT)
        self.check_exit(err)
        return json.loads(out.strip().splitlines()[-1]), err

    def check_exit(self, err: str) -> None:
        code = self.proc.returncode
        assert code >= 0, f"the writer died of signal {-code}; stderr: {err[-2000:]}"
        assert code == 0, f"the writer exited with {code}; stderr: {err[-2000:]}"

    def alive(self) -> None:
        """AssertionError when the writer has ended already (a signal, named)."""
        if self.proc.poll() is not None:
            _, err = self.proc.communicate()
            self.check_exit(err)
            raise AssertionError("the writer ended before its stdin closed")

    def finish_anyhow(self) -> str:
        try:
            _, err = self.proc.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return f"rc {self.proc.returncode}; stderr: {err[-2000:]}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def publishers() -> Iterator[list[Publisher]]:
    started: list[Publisher] = []
    try:
        yield started
    finally:
        for pub in started:
            pub.kill()


def start(publishers: list[Publisher], *args: str) -> Publisher:
    pub = Publisher(*args)
    publishers.append(pub)
    pub.ready()
    return pub


def platform_read(run_id: str, *options: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, PLATFORM_READER, run_id, *options],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for(pub: Publisher, name: str, ok: Any, what: str) -> SegmentStatus:
    """The segment's status once ``ok(status)`` holds (AssertionError after LIMIT seconds or
    as soon as the writer ``pub`` has ended)."""

    def poll() -> SegmentStatus:
        deadline = time.monotonic() + LIMIT
        while True:
            pub.alive()
            status = inspect_segment(name, settle=0.0)
            if status is not None and status.initialised and ok(status):
                return status
            assert time.monotonic() < deadline, f"{what}: {status}"
            time.sleep(0.01)

    return returns(poll, 2 * LIMIT)


def generation_above(pub: Publisher, name: str, generation: int) -> SegmentStatus:
    """Wait until ``pub`` publishes into a segment of a generation above ``generation``."""
    pid = pub.proc.pid
    return wait_for(
        pub,
        name,
        lambda s: s.generation > generation and s.writer_pid == pid and s.head > 0,
        f"no generation above {generation} by the writer (pid {pid})",
    )


def shrink(name: str, size: int) -> None:
    fd = shm_open(name)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


# -- the platform GUI's reader ------------------------------------------------------------------


def test_the_platform_reader_polls_first_then_its_resource_tracker_unlinks_the_name(
    run_id: str, publishers: list[Publisher]
) -> None:
    reader = subprocess.Popen(
        [sys.executable, PLATFORM_READER, run_id, "--frames", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert returns(reader.stdout.readline, LIMIT).strip() == "WAITING"  # type: ignore[union-attr]
        pub = start(publishers, "pump", run_id, "32", "24")
        out, err = returns(reader.communicate, LIMIT)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.communicate()
    first = json.loads(out.strip().splitlines()[-1])
    assert first["statuses"][:2] == ["fastlane-unavailable", "connected"], (first, err)
    assert first["frames"] == 10
    # Its exit unlinked the name (resource tracker); the writer notices and makes it again,
    # so a reader that comes later still finds the run's frames, and newer ones.
    later = platform_read(run_id, "--frames", "5")
    assert later["frames"] == 5 and later["last_k"] > first["last_k"], later
    result, _ = pub.finish()
    assert result["disabled"] is None
    assert len(result["generations"]) >= 2, "the tracker's unlink went unnoticed"


def test_the_platform_reader_attaches_mid_run_closes_and_attaches_again(
    run_id: str, publishers: list[Publisher]
) -> None:
    pub = start(publishers, "pump", run_id, "32", "24")
    seen = platform_read(run_id, "--frames", "5", "--cycles", "4")
    assert seen["frames"] == 20 and seen["errors"] == [], seen
    result, _ = pub.finish()
    assert result["disabled"] is None and result["published"] == result["offered"]


def test_the_platform_reader_follows_rings_re_created_under_it(
    run_id: str, publishers: list[Publisher]
) -> None:
    # a new frame height every 40 frames: each time a new segment, created while the reader
    # polls (it may find it before it has a size, and fail to map it: its own problem)
    pub = start(publishers, "pump", run_id, "32", "24", "40")
    seen = platform_read(run_id, "--frames", "10", "--cycles", "4")
    assert seen["frames"] == 40, seen
    result, _ = pub.finish()
    assert result["disabled"] is None and result["published"] == result["offered"]
    assert len(result["generations"]) >= 2


# -- a segment shrunk, or its name taken, by another process --------------------------------------


@pytest.mark.parametrize("size", [0, HEADER.size, 4096])
def test_a_segment_shrunk_under_the_writer_is_made_again(
    run_id: str, publishers: list[Publisher], size: int
) -> None:
    pub = start(publishers, "pump", run_id, "64", "48")
    name = segment_name(run_id)
    before = wait_for(pub, name, lambda s: s.head > 0, "no frame")
    assert before.size > size
    shrink(name, size)  # a store into the lost pages would be SIGBUS
    after = generation_above(pub, name, before.generation)
    assert after.size == before.size
    assert platform_read(run_id, "--frames", "3")["frames"] == 3
    result, _ = pub.finish()
    assert result["disabled"] is None and result["published"] == result["offered"]


def test_a_writer_shrunk_again_and_again_stops_publishing_with_a_warning(
    run_id: str, publishers: list[Publisher]
) -> None:
    pub = start(publishers, "pump", run_id, "64", "48")
    name = segment_name(run_id)
    status = wait_for(pub, name, lambda s: s.head > 0, "no frame")
    for _ in range(MAX_SHRINKS):
        shrink(name, 0)
        status = generation_above(pub, name, status.generation)
    shrink(name, 0)

    def gone() -> None:
        while os.path.exists(f"/dev/shm/{name}"):
            pub.alive()
            time.sleep(0.01)

    returns(gone, LIMIT)  # the writer gave up and removed its name
    result, err = pub.finish()
    assert "shrunk to 0 bytes by another process" in (result["disabled"] or ""), result
    assert "FastLane publishing disabled" in err
    assert result["offered"] > result["published"]


@pytest.mark.parametrize("size", [4096, 4 << 20])
def test_a_foreign_segment_under_the_name_is_replaced(
    run_id: str, publishers: list[Publisher], size: int
) -> None:
    pub = start(publishers, "pump", run_id, "64", "48")
    name = segment_name(run_id)
    before = wait_for(pub, name, lambda s: s.head > 0, "no frame")
    shm_unlink(name)
    fd = shm_open(name, create=True)  # what a version-1 writer makes: no owner, its own size
    try:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as buf:
            HEADER.pack_into(buf, 0, MAGIC, 1, 0, 2, 64, 12, 2, 2, 3, 0, 0, 0, 0.0, 0.0, 0.0)
    finally:
        os.close(fd)
    after = generation_above(pub, name, before.generation)
    assert after.has_extension and after.size == before.size
    result, _ = pub.finish()
    assert result["disabled"] is None and result["published"] == result["offered"]


# -- a writer closed from another thread ------------------------------------------------------


def test_closing_a_writer_while_another_thread_copies_a_frame_waits_for_the_copy(
    run_id: str, publishers: list[Publisher]
) -> None:
    proc = subprocess.run(
        [sys.executable, PUBLISHER, "close-race", run_id, "5"],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert proc.returncode == 0, f"rc {proc.returncode}: {proc.stderr[-2000:]}"
    assert json.loads(proc.stdout) == {"rounds": 5, "stopped": 5}
