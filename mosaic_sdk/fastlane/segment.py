"""Opening, inspecting and removing FastLane segments without Python's resource tracker."""

from __future__ import annotations

import mmap
import os
import time
from dataclasses import dataclass

from mosaic_sdk.fastlane.layout import (
    EXTENSION,
    EXTENSION_MAGIC,
    FLAG_INVALIDATED,
    HEADER,
    MAGIC,
    OFF_FLAGS,
    segment_name,
)
from mosaic_sdk.shm.atomics import SharedWords
from mosaic_sdk.shm.processes import process_alive
from mosaic_sdk.shm.segment import shm_open, shm_unlink

_DEV_SHM = "/dev/shm"


def _same_inode(name: str, fd: int) -> bool:
    """Whether ``name`` still names the segment open as ``fd`` (True when it cannot be told)."""
    path = os.path.join(_DEV_SHM, name)
    if not os.path.isdir(_DEV_SHM):  # pragma: no cover - not Linux
        return True
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


class Mapping:
    """An open segment: its descriptor, a shared mmap of all of it and atomic word access."""

    def __init__(self, name: str, fd: int, size: int) -> None:
        self.name = name
        self.fd = fd
        self.size = size
        self.mmap = mmap.mmap(fd, size)
        self.words = SharedWords(self.mmap)

    @classmethod
    def open(cls, name: str) -> Mapping:
        """Map an existing segment (FileNotFoundError when there is none)."""
        fd = shm_open(name, create=False)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER.size:
                raise FastLaneSegmentTooSmall(name, size)
            return cls(name, fd, size)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def create(cls, name: str, size: int) -> Mapping:
        """Create the segment exclusively (FileExistsError when the name is taken)."""
        fd = shm_open(name, create=True)
        try:
            os.ftruncate(fd, size)
            return cls(name, fd, size)
        except BaseException:
            os.close(fd)
            shm_unlink(name)
            raise

    def current_size(self) -> int:
        """The segment's size now (another process may have resized it since it was mapped)."""
        return os.lseek(self.fd, 0, os.SEEK_END)  # cheaper than fstat; the offset is unused

    def intact(self) -> bool:
        """Whether all of the mapping is still backed by the segment. A store into a page
        beyond a segment that another process shrank (``ftruncate``) raises SIGBUS, which no
        Python code can catch: check this before writing."""
        return self.current_size() >= self.size

    def named(self) -> bool:
        """Whether the segment's name still refers to this segment (not removed, e.g. by a
        version-1 reader's resource tracker, nor replaced)."""
        return _same_inode(self.name, self.fd)

    def invalidate(self) -> None:
        """Set FLAG_INVALIDATED with an atomic OR (never a header rewrite); nothing when the
        header is no longer backed (the segment was shrunk under us)."""
        if self.words is not None and self.current_size() >= HEADER.size:
            self.words.fetch_or_u32(OFF_FLAGS, FLAG_INVALIDATED)

    def unlink_if_mine(self) -> bool:
        """Unlink the name if it still refers to this very segment."""
        if self.named():
            return shm_unlink(self.name)
        return False

    def __enter__(self) -> Mapping:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap and close; a numpy view still alive keeps the memory mapped until it dies."""
        if self.words is not None:
            self.words.release()
            self.words = None
        try:
            self.mmap.close()
        except BufferError:
            pass  # views handed out by latest_view(); the mapping goes with the last of them
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class FastLaneSegmentTooSmall(OSError):
    """The segment is smaller than a header: it is still being created, or is not FastLane."""

    def __init__(self, name: str, size: int) -> None:
        super().__init__(
            f"shared-memory segment {name!r} holds {size} bytes, not a FastLane header"
        )


@dataclass(frozen=True)
class SegmentStatus:
    """What a segment's header and extension block say, read without attaching."""

    name: str
    size: int
    initialised: bool
    invalidated: bool
    width: int = 0
    height: int = 0
    channels: int = 0
    capacity: int = 0
    slot_size: int = 0
    payload_size: int = 0
    head: int = 0
    has_extension: bool = False
    writer_pid: int = 0
    writer_start_ticks: int = 0
    generation: int = 0
    metrics_offset: int = 0

    @property
    def writer_alive(self) -> bool:
        return self.has_extension and process_alive(self.writer_pid, self.writer_start_ticks)

    @property
    def stale(self) -> bool:
        """Invalidated, unowned (version-1 writer) or owned by a process that is gone."""
        return self.invalidated or not self.has_extension or not self.writer_alive


def read_status(mapping: Mapping) -> SegmentStatus:
    """Decode the header and, when present, the extension block of an open segment."""
    buf = mapping.mmap
    header = HEADER.unpack_from(buf, 0)
    magic, _version, flags, capacity, slot_size, payload_size, width, height, chans = header[:9]
    initialised = magic == MAGIC and capacity > 0 and slot_size > 0
    base = dict(name=mapping.name, size=mapping.size, invalidated=bool(flags & FLAG_INVALIDATED))
    if not initialised:
        return SegmentStatus(initialised=False, **base)  # type: ignore[arg-type]
    fields = dict(width=width, height=height, channels=chans, capacity=capacity, head=header[10])
    fields.update(slot_size=slot_size, payload_size=payload_size)
    ext_off = HEADER.size + capacity * slot_size
    if ext_off + EXTENSION.size <= mapping.size:
        ext = EXTENSION.unpack_from(buf, ext_off)
        if ext[0] == EXTENSION_MAGIC:
            fields.update(
                has_extension=True,
                writer_pid=ext[3],
                generation=ext[4],
                writer_start_ticks=ext[5],
                metrics_offset=ext[6],
            )
    return SegmentStatus(initialised=True, **base, **fields)  # type: ignore[arg-type]


def inspect_segment(name: str, *, settle: float = 0.5) -> SegmentStatus | None:
    """Status of segment ``name``, or None when it does not exist. One not initialised yet
    gets ``settle`` seconds to become so (its writer may be between ``shm_open`` and its last
    header store)."""
    deadline = time.monotonic() + settle
    while True:
        try:
            mapping = Mapping.open(name)
        except FileNotFoundError:
            return None
        except FastLaneSegmentTooSmall:
            if time.monotonic() >= deadline:
                return SegmentStatus(name=name, size=0, initialised=False, invalidated=False)
            time.sleep(0.01)
            continue
        try:
            status = read_status(mapping)
        finally:
            mapping.close()
        if status.initialised or time.monotonic() >= deadline:
            return status
        time.sleep(0.01)


def remove_stale(name: str) -> bool:
    """Invalidate and unlink segment ``name`` if it is stale; True when it was removed."""
    status = inspect_segment(name)
    if status is None or (status.initialised and not status.stale):
        return False
    try:
        mapping = Mapping.open(name)
    except FileNotFoundError:
        return False
    except FastLaneSegmentTooSmall:
        return shm_unlink(name)  # never initialised within the settle time: abandoned
    try:
        mapping.invalidate()  # attached readers of the dead segment let go of it
        return mapping.unlink_if_mine()
    finally:
        mapping.close()


def cleanup_stale_segment(run_id: str) -> bool:
    """Remove the run's FastLane segment if its writer is dead or it was invalidated; True
    when one was removed. Idempotent; ``mosaic run`` calls it (``mosaic_run_cleanup`` hook)
    after every worker exit, SIGKILL included."""
    return remove_stale(segment_name(run_id))
