"""Fixtures for the shm transport tests: unique segment names that are always cleaned up."""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator

import pytest

from mosaic_sdk.shm.segment import segment_exists, unlink_segment


class Segments:
    """Hands out segment names and child processes; cleans both up after the test."""

    #: How long a child process has to end by itself before it is killed.
    join_timeout = 2.0

    def __init__(self) -> None:
        self.names: list[str] = []
        self.processes: list = []

    def name(self) -> str:
        name = f"mosaic.shm.test-{os.getpid()}-{secrets.token_hex(4)}"
        self.names.append(name)
        return name

    def track(self, process):  # noqa: ANN001 - multiprocessing.Process
        self.processes.append(process)
        return process

    def cleanup(self) -> list[str]:
        for p in self.processes:
            p.join(self.join_timeout)
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(2.0)
        leaked = [n for n in self.names if segment_exists(n)]
        for n in self.names:
            unlink_segment(n)
        return leaked


@pytest.fixture
def segments() -> Iterator[Segments]:
    """Segment names for one test; fails the test if the code under test leaked one."""
    seg = Segments()
    try:
        yield seg
    finally:
        leaked = seg.cleanup()
    assert not leaked, f"segments left in /dev/shm by the code under test: {leaked}"
