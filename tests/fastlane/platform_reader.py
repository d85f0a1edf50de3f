"""The platform GUI's FastLane reader, as a script: ``python platform_reader.py RUN_ID [options]``.

Re-written from reading the platform's FastLaneReader (gym_gui/fastlane/buffer.py) and the
FastLaneConsumer that polls it (gym_gui/ui/fastlane_consumer.py); it imports nothing from
mosaic_sdk. What it does to the segment is what the GUI does:

- attach with ``multiprocessing.shared_memory.SharedMemory(name, create=False)``: open the
  name read-write, map its current size, and register the name with this process's resource
  tracker (Python 3.8 and later), which unlinks it when this process exits;
- poll every 16 ms: a missing name is "fastlane-unavailable" (try again at the next poll);
  FLAG_INVALIDATED makes it close and attach again ("reconnecting"); a header with capacity
  or slot_size 0 is skipped; else it walks back from ``head`` for the newest even slot;
- close (release the views, unmap, close the fd), never unregistering the name.

Options: ``--frames N`` stop after reading N frames (default 20); ``--cycles C`` close and
attach again C times, reading N frames each time (default 1); ``--seconds S`` give up after S
seconds (default 30). Prints WAITING when its first poll finds no segment, then one JSON
object: the statuses seen, frames read, the largest frame number read (the publisher writes
its frame number in a frame's first 8 bytes) and the exceptions other than a missing name.
"""

from __future__ import annotations

import argparse
import json
import struct
import time
from multiprocessing import shared_memory

HEADER = struct.Struct("<4sIIIIIIIIIQQddd")
SLOT = struct.Struct("<QII")
FLAG_INVALIDATED = 1
POLL_SECONDS = 0.016


class PlatformReader:
    """One attach: the mapped segment and what the GUI reads from it."""

    def __init__(self, name: str) -> None:
        self.shm = shared_memory.SharedMemory(name=name, create=False)
        self.mv = memoryview(self.shm.buf)

    def header(self) -> tuple:
        return HEADER.unpack_from(self.mv, 0)

    def latest_frame(self) -> bytes | None:
        h = self.header()
        capacity, slot_size, head = h[3], h[4], h[10]
        if capacity <= 0 or slot_size <= 0 or head == 0:
            return None
        for back in range(min(capacity, head)):
            n = head - back
            off = 80 + ((n - 1) % capacity) * slot_size
            seq1, frame_len, _meta_len = SLOT.unpack_from(self.mv, off)
            if seq1 % 2 == 1:
                continue
            data = bytes(self.mv[off + 16 : off + 16 + frame_len])
            seq2, _, _ = SLOT.unpack_from(self.mv, off)
            if seq1 == seq2:
                return data
        return None

    def close(self) -> None:
        self.mv.release()
        self.shm.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_id")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    name = "mosaic.fastlane." + args.run_id.replace("/", "_")
    statuses: list[str] = []
    errors: list[str] = []
    frames = cycles = 0
    last_k = 0
    reader: PlatformReader | None = None
    deadline = time.monotonic() + args.seconds

    def status(text: str) -> None:
        if not statuses or statuses[-1] != text:
            statuses.append(text)

    while cycles < args.cycles and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        if reader is None:
            try:
                reader = PlatformReader(name)
                status("connected")
            except FileNotFoundError:
                if not statuses:
                    print("WAITING", flush=True)  # polled before the segment existed
                status("fastlane-unavailable")
            except Exception as exc:  # noqa: BLE001 - the GUI's slot would see it raised
                errors.append(f"attach: {exc!r}")
            continue
        try:
            if reader.header()[2] & FLAG_INVALIDATED:
                reader.close()
                reader = None
                status("reconnecting")
                continue
            data = reader.latest_frame()
        except Exception as exc:  # noqa: BLE001 - the consumer closes and attaches again
            errors.append(f"read: {exc!r}")
            reader.close()
            reader = None
            status("fastlane-unavailable")
            continue
        if data is None or len(data) < 8:
            continue
        frames += 1
        last_k = max(last_k, int.from_bytes(data[:8], "little"))
        if frames >= args.frames * (cycles + 1):
            cycles += 1
            reader.close()  # FastLaneConsumer.stop(); the name stays registered
            reader = None
    if reader is not None:
        reader.close()
    print(
        json.dumps({"statuses": statuses, "frames": frames, "last_k": last_k, "errors": errors}),
        flush=True,
    )


if __name__ == "__main__":
    main()
