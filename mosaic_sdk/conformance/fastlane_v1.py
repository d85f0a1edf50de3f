"""An independent version-1 FastLane reader, written from the deployed layout, for the checks."""

from __future__ import annotations

import mmap
import os
import struct
import threading
import time
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

HEADER = struct.Struct("<4sIIIIIIIIIQQddd")
SLOT_HEADER = struct.Struct("<QII")
MAGIC = b"FLAN"
VERSION = 1
SHM_DIR = "/dev/shm"


def segment_name(run_id: str) -> str:
    """The deployed segment name of a run: ``mosaic.fastlane.{run_id}``, ``/`` as ``_``."""
    return f"mosaic.fastlane.{run_id}".replace("/", "_")


#: :data:`HEADER`'s fields, as :meth:`V1SegmentReader.header` returns them.
V1Header = namedtuple(
    "V1Header",
    "magic version flags capacity slot_size payload_size width height channels fmt_hash head tail"
    " last_reward rolling_return step_rate_hz",
)


@dataclass(frozen=True)
class V1Frame:
    """Frame ``number`` (1-based) with its slot's ``seq``; the dimensions are the header's."""

    number: int
    seq: int
    pixels: bytes
    metadata: bytes


class V1SegmentReader:
    """Read-only view of one FastLane segment in ``/dev/shm`` (Linux)."""

    def __init__(self, name: str) -> None:
        self.name = name
        fd = os.open(os.path.join(SHM_DIR, name), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER.size:
                raise ValueError(f"segment {name} is {size} bytes, smaller than the header")
            self._map = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        self.size = size

    def header(self) -> V1Header:
        return V1Header._make(HEADER.unpack_from(self._map, 0))

    def latest_frame(self) -> V1Frame | None:
        """The newest complete frame, read as the deployed reader does; None if none yet."""
        h = self.header()
        if h.magic != MAGIC or h.capacity == 0 or h.head == 0:
            return None
        for back in range(h.capacity):
            number = h.head - back
            if number <= 0:
                break
            offset = HEADER.size + ((number - 1) % h.capacity) * h.slot_size
            if offset + SLOT_HEADER.size > self.size:
                raise ValueError(f"slot of frame {number} lies outside the segment")
            seq, frame_len, metadata_len = SLOT_HEADER.unpack_from(self._map, offset)
            if seq % 2:
                continue  # in flight
            start = offset + SLOT_HEADER.size
            end = start + frame_len + metadata_len
            if end > self.size or frame_len + metadata_len > h.slot_size - SLOT_HEADER.size:
                raise ValueError(
                    f"frame {number} claims {frame_len + metadata_len} bytes, more than its slot"
                )
            data = bytes(self._map[start:end])
            if SLOT_HEADER.unpack_from(self._map, offset)[0] != seq:
                continue  # overwritten while copying
            return V1Frame(number, seq, pixels=data[:frame_len], metadata=data[frame_len:])
        return None

    def close(self) -> None:
        self._map.close()

    def __enter__(self) -> V1SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def probe_fastlane(run_id: str, process: Any, done: threading.Event) -> dict[str, Any]:
    """While a worker runs, attach to its segment and read frames with the v1 reader.

    Returns what was seen: ``seen`` (the segment appeared), ``frame`` (the first complete
    :class:`V1Frame`) and ``header`` (the :class:`V1Header` it was read under), ``heads`` (head
    values observed), ``streams`` (the run's other segments, ``<segment>-w<n>`` as multi-agent
    runs name their per-agent streams, each with the highest head seen) and ``errors``.
    """
    name = segment_name(run_id)
    found: dict[str, Any] = {"name": name, "seen": False, "header": None, "frame": None}
    found.update(heads=[], streams={}, errors=[])
    reader: V1SegmentReader | None = None
    streams: dict[str, V1SegmentReader] = {}
    try:
        while not done.is_set():
            _watch_streams(name, streams, found)
            if reader is None and os.path.exists(os.path.join(SHM_DIR, name)):
                try:
                    reader = V1SegmentReader(name)
                    found["seen"] = True
                except (OSError, ValueError) as exc:
                    found["errors"].append(f"cannot map {name}: {exc}")
            if reader is not None:
                header = reader.header()
                if header.head and found["heads"][-1:] != [header.head]:
                    found["heads"].append(header.head)
                if found["frame"] is None and header.head:
                    try:
                        found["frame"], found["header"] = reader.latest_frame(), header
                    except ValueError as exc:
                        found["errors"].append(str(exc))
                if found["frame"] is not None and len(found["heads"]) >= 3 and not streams:
                    break
            if process.poll() is not None:
                break
            time.sleep(0.02)
    finally:
        for opened in [reader, *streams.values()]:
            if opened is not None:
                opened.close()
    return found


def _watch_streams(name: str, streams: dict[str, V1SegmentReader], found: dict[str, Any]) -> None:
    """Map the run's per-stream segments (``<name>-w<n>``) as they appear; note their heads."""
    prefix = name + "-w"
    try:
        names = [n for n in os.listdir(SHM_DIR) if n.startswith(prefix)]
    except OSError:
        return
    for stream_name in names:
        if stream_name not in streams:
            try:
                streams[stream_name] = V1SegmentReader(stream_name)
            except (OSError, ValueError):  # gone again, or not sized yet: next round
                found["streams"].setdefault(stream_name, 0)
                continue
        try:
            head = streams[stream_name].header().head
        except (OSError, ValueError):
            continue
        found["streams"][stream_name] = max(found["streams"].get(stream_name, 0), head)
