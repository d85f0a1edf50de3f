"""A re-implementation of the deployed (version-1) FastLane algorithm, defects included.

Used by the regression tests to show each defect, and by benchmarks/fastlane as the baseline.
It follows UPSTREAM.md: ``SharedMemory`` (so the resource tracker registers the segment in
every process), every header update a read-modify-write of all 80 bytes, a copy of each frame
into ``bytes`` before writing it, 128 unaligned slots, metrics only in the header.
Imports nothing from mosaic_sdk.
"""

from __future__ import annotations

import struct
import zlib
from multiprocessing import shared_memory

HEADER = struct.Struct("<4sIIIIIIIIIQQddd")
SLOT = struct.Struct("<QII")
FLAG_INVALIDATED = 1


def name_of(run_id: str) -> str:
    return "mosaic.fastlane." + run_id.replace("/", "_")


class LegacyWriter:
    def __init__(
        self, run_id: str, width: int, height: int, channels: int = 3, capacity: int = 128
    ) -> None:
        self.frame_bytes = width * height * channels
        self.slot_size = 16 + self.frame_bytes  # not aligned (defect 7)
        self.capacity = capacity
        size = 80 + capacity * self.slot_size
        try:
            self.shm = shared_memory.SharedMemory(name=name_of(run_id), create=True, size=size)
        except FileExistsError:  # defect 6: silently reuses whatever is there
            self.shm = shared_memory.SharedMemory(name=name_of(run_id))
        self.buf = self.shm.buf
        fmt = {1: "GRAY", 3: "RGB", 4: "RGBA"}[channels]
        HEADER.pack_into(
            self.buf,
            0,
            b"FLAN",
            1,
            0,
            capacity,
            self.slot_size,
            self.frame_bytes,
            width,
            height,
            channels,
            zlib.crc32(fmt.encode()),
            0,
            0,
            0.0,
            0.0,
            0.0,
        )

    def _header(self) -> list:
        return list(HEADER.unpack_from(self.buf, 0))

    def publish(self, frame, metrics=(0.0, 0.0, 0.0), between=None) -> int:
        data = bytes(frame)  # a copy of every frame
        h = self._header()
        head = h[10] + 1
        off = 80 + ((head - 1) % self.capacity) * self.slot_size
        SLOT.pack_into(self.buf, off, 2 * head + 1, len(data), 0)
        self.buf[off + 16 : off + 16 + len(data)] = data
        SLOT.pack_into(self.buf, off, 2 * head + 2, len(data), 0)
        h = self._header()  # read-modify-write of the whole header (defect 3)
        if between is not None:
            between()  # what another process may do while the header is being rewritten
        h[10] = head
        h[12], h[13], h[14] = metrics
        HEADER.pack_into(self.buf, 0, *h)
        return head

    def close(self) -> None:  # never unlinks (defect 6)
        self.buf = None
        self.shm.close()


class LegacyReader:
    def __init__(self, run_id: str) -> None:
        self.shm = shared_memory.SharedMemory(name=name_of(run_id))  # registers (defect 5)
        self.buf = self.shm.buf

    def latest_frame(self, after_copy=None):
        h = HEADER.unpack_from(self.buf, 0)
        capacity, slot_size, head = h[3], h[4], h[10]
        if head == 0:
            return None
        off = 80 + ((head - 1) % capacity) * slot_size
        seq1, flen, _ = SLOT.unpack_from(self.buf, off)
        if seq1 % 2:
            return None
        data = bytes(self.buf[off + 16 : off + 16 + flen])
        (seq2,) = struct.unpack_from("<Q", self.buf, off)
        if seq1 != seq2:
            return None
        if after_copy is not None:
            after_copy()
        h = HEADER.unpack_from(self.buf, 0)  # metrics from the header (defect 1)
        return data, (h[12], h[13], h[14])

    def close(self) -> None:
        self.buf = None
        self.shm.close()
