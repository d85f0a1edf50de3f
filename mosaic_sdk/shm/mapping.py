"""A mapped transport segment: numpy views of its regions, its signal lines and rings.

Both sides (``SharedMemoryTransport``, ``TransportWorker``, ``SharedMemoryClient``) build one
``MappedSegment`` over their own mapping; nothing here decides who writes what.
"""

from __future__ import annotations

import gc
import mmap
import os
import struct
import time
from typing import Any

import numpy as np

from mosaic_sdk.shm.atomics import SharedWords
from mosaic_sdk.shm.layout import (
    HEADER_SIZE,
    LAYOUT_LRBC,
    LRBC_OFF,
    OFF,
    STATE_CLOSED,
    STATE_READY,
    Layout,
    LayoutError,
    detect_kind,
    publish_magic,
    worker_offset,
)
from mosaic_sdk.shm.ring import ByteRing
from mosaic_sdk.shm.segment import attach_segment
from mosaic_sdk.shm.sync import (
    SLICE,
    PeerGoneError,
    SignalLine,
    TransportClosedError,
    TransportError,
)

#: A waiter's sleep between checks in the lrbc layout: a design-only peer rings no bells.
LRBC_SLICE = 0.001


def begins_envelope(entry: bytes) -> bool:
    """True when a ring entry begins a command envelope (``commands.encode``'s FlatBuffers
    file identifier ``MSHC``): how a reader finds the next message after a refused one."""
    return entry[4:8] == b"MSHC"


class SegmentCorruptedError(TransportError):
    """The segment holds what no process of the transport wrote there: another process
    overwrote it. The transport cannot go on; close it and start a new one."""


class MappedSegment:
    """Views over one mapping of a segment laid out as ``layout``."""

    def __init__(self, name: str, mm: mmap.mmap, layout: Layout) -> None:
        self.name = name
        self.layout = layout
        self.off = layout.off
        self._mm: mmap.mmap | None = mm
        self._static_end, self._mutable = layout.static_spans()
        self._static = self._static_bytes()
        self._tick = 0
        self.words = SharedWords(mm)
        n = layout.num_envs

        def view(offset: int, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
            count = int(np.prod(shape))
            return np.frombuffer(mm, dtype=dtype, count=count, offset=offset).reshape(shape)

        self.obs = view(layout.obs_offset, np.float32, (n, layout.obs_size))
        self.actions = view(layout.act_offset, np.float32, (n, layout.act_size))
        self.rewards = view(layout.rewards_offset, np.dtype(layout.rewards_dtype), (n,))
        self.terminated = view(layout.terminated_offset, np.uint8, (n,))
        self.truncated = view(layout.truncated_offset, np.uint8, (n,))
        self.resets = view(layout.resets_offset, np.uint8, (n,))
        shape = layout.image_shape
        self.image = view(layout.image_offset, np.uint8, (n, *shape)) if shape else None
        self.side: list[tuple[np.ndarray, np.ndarray]] = []  # per worker: (to worker, back)
        for w in range(layout.num_workers if layout.side_size else 0):
            to_worker, back = (
                view(layout.side_area(w, t), np.uint8, (layout.side_size,)) for t in (True, False)
            )
            self.side.append((to_worker, back))
        self.base_address = int(np.frombuffer(mm, dtype=np.uint8, count=1).ctypes.data)
        w = self.words
        o = self.off
        lrbc = layout.kind == LAYOUT_LRBC
        nap = LRBC_SLICE if lrbc else SLICE
        self.frame = SignalLine(w, o["frame_seq"], o["frame_bell"], o["frame_waiters"], nap)
        self.action = SignalLine(w, o["action_seq"], o["action_bell"], o["action_waiters"], nap)
        # command waits: the same bells, their own adaptive spin (see sync's docstring)
        self.replies = self.frame.twin()
        self.requests = self.action.twin()
        size, sync = layout.cmd_ring_size, begins_envelope
        self.e2c = ByteRing(mm, w, layout.cmd_e2c_offset, size, compact=lrbc, resync=sync)
        self.c2e = ByteRing(mm, w, layout.cmd_c2e_offset, size, compact=lrbc, resync=sync)
        self.workers = [
            SignalLine(w, *(worker_offset(i, f) for f in ("done_seq", "done_bell", "done_waiters")))
            for i in range(layout.num_workers)
        ]

    @classmethod
    def attach(cls, names: str | tuple[str, ...], timeout: float = 10.0) -> MappedSegment:
        """Map an existing segment (the first of ``names`` that exists), waiting up to
        ``timeout`` s for its engine to be ready."""
        candidates = (names,) if isinstance(names, str) else names
        deadline = time.monotonic() + timeout
        while True:
            mm = None
            for name in candidates:
                try:
                    mm = attach_segment(name)
                    break
                except FileNotFoundError:
                    if name == candidates[-1] and time.monotonic() >= deadline:
                        raise
            if mm is None:
                time.sleep(0.01)
                continue
            try:
                if len(mm) < HEADER_SIZE:
                    raise LayoutError(
                        f"shm segment {name!r} has {len(mm)} bytes, less than a transport header"
                    )
                kind = detect_kind(mm)  # None: no magic yet, the engine is writing the header
                if kind is not None:
                    words = SharedWords(mm)
                    state_off = LRBC_OFF["state"] if kind == LAYOUT_LRBC else OFF["state"]
                    state = words.load_u32(state_off)
                    words.release()
                    if state == STATE_CLOSED:
                        raise TransportClosedError(
                            f"shm transport {name!r} was closed by its engine"
                        )
                    # an lrbc segment is ready once its magic is there (a design engine writes
                    # no state word); ours is ready when its engine says so
                    if state == STATE_READY or kind == LAYOUT_LRBC:
                        return cls(name, mm, Layout.read_header(mm))
            except BaseException:
                _close_mapping(mm)
                raise
            mm.close()
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"shm transport {name!r} exists but its engine did not finish setting it up "
                    f"within {timeout} s"
                )
            time.sleep(0.01)

    # -- integrity --------------------------------------------------------------------------
    def _static_bytes(self) -> bytes:
        assert self._mm is not None
        head = bytearray(self._mm[: self._static_end])
        for off, size in self._mutable:
            head[off : off + size] = bytes(size)
        return bytes(head)

    def mark_ready(self) -> None:
        """Engine: the segment is set up; ``state`` = ready and, in lrbc, the magic last."""
        self.store("state", STATE_READY)
        publish_magic(self.layout, self.words)
        self._static = self._static_bytes()

    def verify_header(self) -> None:
        """``SegmentCorruptedError`` naming the fields when the header's static part is no
        longer what it was when this process mapped the segment (one 160-byte compare)."""
        if self._mm is None:
            return
        now = self._static_bytes()
        if now == self._static:
            return
        changed = [
            name
            for name, off, fmt, _ in self.layout.fields
            if off < self._static_end
            and now[off : off + struct.calcsize("<" + fmt)]
            != self._static[off : off + struct.calcsize("<" + fmt)]
        ]
        raise self.corrupted(f"its header changed under this process ({', '.join(changed)})")

    def verify_now_and_then(self) -> None:
        """:meth:`verify_header` on every 64th call (once a step on the hot paths; the check
        costs about 1 us, a small vector env's step about 40)."""
        self._tick = tick = (self._tick + 1) & 63
        if not tick:
            self.verify_header()

    def corrupted(self, what: str) -> SegmentCorruptedError:
        """The error for a segment found overwritten; ``what`` says how it was found."""
        return SegmentCorruptedError(
            f"shm transport {self.name!r} is corrupt: {what}. Another process wrote into the "
            f"segment (/dev/shm/{self.name}); the transport cannot go on: close it and start a "
            "new one, and find what writes there"
        )

    # -- header words -----------------------------------------------------------------------
    def load(self, field: str) -> int:
        """Acquire load of a u32 header field."""
        return int(self.words.load_u32(self.off[field]))

    def store(self, field: str, value: int) -> None:
        """Release store of a u32 header field."""
        self.words.store_u32(self.off[field], value)

    @property
    def state(self) -> int:
        """0 initialising, 1 ready, 2 closed."""
        return self.load("state")

    def check_open(self) -> None:
        """Raise ``TransportClosedError`` once the engine closed the segment."""
        if self.state == STATE_CLOSED:
            raise TransportClosedError(f"shm transport {self.name!r} was closed by its engine")

    def worker_pid(self, index: int) -> int:
        """Pid registered in worker slot ``index`` (0 when free)."""
        return int(self.words.load_u32(worker_offset(index, "pid")))

    def worker_slice(self, index: int) -> tuple[int, int]:
        """``(env_begin, env_end)`` of worker ``index``."""
        w = self.words
        return (
            int(w.load_u32(worker_offset(index, "env_begin"))),
            int(w.load_u32(worker_offset(index, "env_end"))),
        )

    # -- lifetime ---------------------------------------------------------------------------
    def release(self) -> None:
        """Drop every view and unmap (the mapping lingers while outside views still exist)."""
        mm, self._mm = self._mm, None
        if mm is None:
            return
        self.words.release()
        self.e2c.release()
        self.c2e.release()
        for attr in ("obs", "actions", "rewards", "terminated", "truncated", "resets", "image"):
            setattr(self, attr, None)
        self.side = []
        try:
            mm.close()
        except BufferError:
            pass  # a caller still holds a numpy view; the mapping goes when it does

    @property
    def closed(self) -> bool:
        """True after ``release``."""
        return self._mm is None


def _close_mapping(mm: mmap.mmap) -> None:
    """Unmap, first dropping views a failed constructor may have left behind."""
    try:
        mm.close()
    except BufferError:
        gc.collect()  # the views die with the failed constructor's frame
        try:
            mm.close()
        except BufferError:
            pass  # still referenced elsewhere: unmapped when the last view goes


def watch_error(name: str, role: str, pid: int) -> PeerGoneError:
    """The error raised when ``role`` (pid) of transport ``name`` is gone."""
    return PeerGoneError(
        f"shm transport {name!r}: the {role} process (pid {pid}) exited; "
        f"this side ({os.getpid()}) cannot continue"
    )
