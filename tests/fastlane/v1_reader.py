"""A version-1 FastLane reader written only from the table in UPSTREAM.md.

It deliberately imports nothing from mosaic_sdk: it stands for the deployed viewer, which
knows the 80-byte header, the 16-byte slot header and the seq rule, and nothing else.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib

HEADER = struct.Struct("<4sIIIIIIIIIQQddd")
SLOT = struct.Struct("<QII")
FLAG_INVALIDATED = 1


def segment_path(run_id: str) -> str:
    return "/dev/shm/mosaic.fastlane." + run_id.replace("/", "_")


class V1Reader:
    def __init__(self, run_id: str) -> None:
        fd = os.open(segment_path(run_id), os.O_RDONLY)
        try:
            self.buf = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        finally:
            os.close(fd)

    def header(self) -> dict:
        names = (
            "magic version flags capacity slot_size payload_size width height channels "
            "fmt_hash head tail last_reward rolling_return step_rate_hz"
        ).split()
        return dict(zip(names, HEADER.unpack_from(self.buf, 0), strict=True))

    def latest_frame(self) -> dict | None:
        h = self.header()
        if h["magic"] != b"FLAN" or h["version"] != 1 or h["capacity"] == 0:
            return None
        if h["flags"] & FLAG_INVALIDATED:
            return None
        head = h["head"]
        # walk back from the newest slot, skipping odd seq
        for back in range(min(head, h["capacity"])):
            n = head - back
            off = 80 + ((n - 1) % h["capacity"]) * h["slot_size"]
            seq1, frame_len, meta_len = SLOT.unpack_from(self.buf, off)
            if seq1 % 2 == 1 or seq1 == 0:
                continue
            frame = bytes(self.buf[off + 16 : off + 16 + frame_len])
            meta = bytes(self.buf[off + 16 + frame_len : off + 16 + frame_len + meta_len])
            (seq2,) = struct.unpack_from("<Q", self.buf, off)
            if seq1 != seq2:
                continue
            return {
                "data": frame,
                "metadata": meta,
                "width": h["width"],
                "height": h["height"],
                "channels": h["channels"],
                "fmt_ok": h["fmt_hash"]
                == zlib.crc32({1: b"GRAY", 3: b"RGB", 4: b"RGBA"}[h["channels"]]),
                "metrics": (h["last_reward"], h["rolling_return"], h["step_rate_hz"]),
                "seq": seq1,
            }
        return None

    def close(self) -> None:
        self.buf.close()
