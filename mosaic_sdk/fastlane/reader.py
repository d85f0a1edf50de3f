"""FastLaneReader: the viewer side of a run's frame ring."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mosaic_sdk.fastlane.integrity import (
    RingGeometry,
    corrupt_slot,
    ring_geometry,
    slot_problem,
)
from mosaic_sdk.fastlane.layout import (
    FLAG_INVALIDATED,
    HEADER,
    OFF_FLAGS,
    OFF_HEAD,
    OFF_HUD,
    SLOT_HEADER,
    segment_name,
)
from mosaic_sdk.fastlane.records import (
    FastLaneCorruptError,
    FastLaneError,
    FastLaneFrame,
    FastLaneMetrics,
    FastLaneUnavailableError,
    make_frame,
    make_metrics,
)
from mosaic_sdk.fastlane.segment import (
    FastLaneSegmentTooSmall,
    Mapping,
    SegmentStatus,
    read_status,
)

_TRIES = 4
_U64 = (1 << 64) - 1


def _fits(out: Any, frame_bytes: int) -> bool:
    """Whether ``out`` is a writable, C-contiguous buffer of at least ``frame_bytes`` bytes."""
    try:
        view = memoryview(out)
    except TypeError:
        return False
    with view:
        return not view.readonly and view.c_contiguous and view.nbytes >= frame_bytes


def _metrics_at(words: Any, offset: int) -> FastLaneMetrics:
    """The three f64 HUD scalars stored at ``offset``."""
    return FastLaneMetrics(*(words.load_f64(offset + 8 * i) for i in range(3)))


@dataclass(frozen=True)
class FastLaneFrameView:
    """A zero-copy view of the newest frame (``array``: read-only, ``(height, width,
    channels)``, in shared memory) and the ``metrics`` read with it. Use the pixels, then call
    :meth:`still_valid`: False means the writer reused the slot meanwhile, so drop them.
    """

    array: np.ndarray
    metrics: FastLaneMetrics
    metadata: bytes | None
    seq: int
    generation: int
    _words: Any = field(repr=False, compare=False)
    _seq_off: int = field(repr=False, compare=False)
    _seq_value: int = field(repr=False, compare=False)

    @property
    def width(self) -> int:
        return int(self.array.shape[1])

    @property
    def height(self) -> int:
        return int(self.array.shape[0])

    @property
    def channels(self) -> int:
        return int(self.array.shape[2])

    def still_valid(self) -> bool:
        """Whether the slot still holds this frame (an acquire fence, then one load)."""
        words = self._words
        try:
            words.fence()
            return bool(words.load_u64(self._seq_off) == self._seq_value)
        except ValueError:  # the reader was closed: the mapping may be gone
            return False


class FastLaneReader:
    """Reads the newest frame of a run's ring; follows the ring when it is re-created.

    Attaching maps the segment without registering it anywhere, so a reader that exits leaves
    the writer's segment alone. Lossy by design: only the newest complete frame is returned.
    """

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id
        self._name = segment_name(run_id)
        self._mapping: Mapping | None = None
        self._words: Any = None
        self.retries = 0
        self.reattachments = 0
        self._attach()

    @classmethod
    def attach(cls, run_id: str) -> FastLaneReader:
        """Attach to ``run_id``'s ring; FastLaneUnavailableError when there is none (yet)."""
        return cls(run_id)

    # -- attaching -----------------------------------------------------------------------
    def _attach(self) -> None:
        try:
            mapping = Mapping.open(self._name)
        except (FileNotFoundError, FastLaneSegmentTooSmall):
            raise FastLaneUnavailableError(
                f"no FastLane segment for run {self._run_id!r} (shared memory {self._name!r}); "
                "is the worker running with FastLane switched on?"
            ) from None
        try:
            status = read_status(mapping)
            geometry = self._check(status)
        except BaseException:
            mapping.close()
            raise
        old = self._mapping
        self._mapping = mapping
        self._words = mapping.words
        self._geometry = g = geometry
        # -1: a version-1 writer, metrics only in the header (racy, as deployed)
        self._metrics_off = g.metrics_offset
        self._generation = status.generation
        self._views: list[np.ndarray | None] = [None] * g.capacity
        self._bind_native_reads()
        if old is not None:
            old.close()
            self.reattachments += 1

    def _bind_native_reads(self) -> None:
        """Make ``latest_frame`` and ``read_latest_into`` the native cursor's methods: one C
        call for a plain read, :meth:`_slow` for every other case. In the instance's
        ``__dict__`` they shadow the class's methods (no Python frame per call); the Python
        fallback (``MOSAIC_ATOMICS=python``) has no cursor and keeps the class's methods.
        """
        instance = self.__dict__
        make = getattr(self._words, "fastlane_cursor", None)
        if make is None:
            instance.pop("latest_frame", None)
            instance.pop("read_latest_into", None)
            return
        g = self._geometry
        cursor = make(
            g.capacity,
            g.slot_size,
            g.frame_bytes,
            g.payload_cap,
            self._metrics_off,
            g.width,
            g.height,
            g.channels,
            self._generation,
            FastLaneFrame,
            FastLaneMetrics,
            self._slow,
        )
        instance["latest_frame"] = cursor.latest_frame
        instance["read_latest_into"] = cursor.read_into

    def _check(self, status: SegmentStatus) -> RingGeometry:
        if not status.initialised:
            raise FastLaneUnavailableError(
                f"FastLane segment {self._name!r} is not initialised yet"
            )
        if status.invalidated:
            raise FastLaneUnavailableError(
                f"FastLane segment {self._name!r} was invalidated: its writer has closed it"
            )
        return ring_geometry(status)

    def _live_words(self) -> Any:
        """The words of the current ring, re-attached after FLAG_INVALIDATED; None while no
        new ring is ready. FastLaneError once closed."""
        words = self._require()
        if words.load_u32(OFF_FLAGS) & FLAG_INVALIDATED:
            try:
                self._attach()
            except FastLaneUnavailableError:
                return None
        return self._words

    # -- reading -------------------------------------------------------------------------
    def latest_frame(self) -> FastLaneFrame | None:
        """The newest complete frame with the metrics published with it, or None.

        None means: nothing published yet, the writer has gone, or the writer overwrote the
        slot during every one of a few tries (counted in ``retries``).
        """
        return self._read(None, _TRIES)

    def read_latest_into(self, out: Any) -> FastLaneFrame | None:
        """Like :meth:`latest_frame`, but copies the pixels into ``out`` (a writable buffer of
        at least ``width*height*channels`` bytes, e.g. a preallocated uint8 array), which
        becomes the frame's ``data``. Nothing is allocated per call."""
        return self._read(out, _TRIES)

    def _slow(self, out: Any, tried: int) -> FastLaneFrame | None:
        """The native cursor's way out: every case but a plain read of a complete slot.
        ``tried`` is 1 when the cursor already found the newest slot not ready."""
        self.retries += tried
        return self._read(out, _TRIES - tried)

    def _read(self, out: Any, tries: int) -> FastLaneFrame | None:
        words = self._live_words()
        if words is None:
            return None
        g = self._geometry
        metrics_off = self._metrics_off
        frame_bytes = g.frame_bytes
        head = 0
        for _ in range(tries):
            head = words.load_u64(OFF_HEAD)
            if head == 0:
                return None
            slot_off = HEADER.size + ((head - 1) % g.capacity) * g.slot_size
            try:
                got = words.fastlane_read(
                    slot_off,
                    head,
                    slot_off + metrics_off if metrics_off >= 0 else OFF_HUD,
                    g.payload_cap,
                    out,
                )
            except ValueError:
                if out is None or not _fits(out, frame_bytes):
                    raise  # the caller's buffer is too small or not writable
                raise self._slot_error(slot_off, frame_len=None) from None
            if got is not None:
                data, meta, r, ret, hz, _ns = got
                if (len(data) if out is None else data) != frame_bytes:
                    raise self._slot_error(slot_off, frame_len=len(data) if out is None else data)
                return make_frame(
                    data if out is None else out,
                    g.width,
                    g.height,
                    g.channels,
                    make_metrics(r, ret, hz),
                    meta,
                    head,
                    self._generation,
                )
            self.retries += 1
        self._diagnose(head)
        return None

    def _diagnose(self, head: int) -> None:
        """After every try failed: raise FastLaneCorruptError when the slot of frame ``head``
        is complete and stable but its lengths do not fit the ring (the native copy reports
        that as "not ready", like a torn read); otherwise return (a writer was busy)."""
        words, g = self._words, self._geometry
        slot_off = HEADER.size + ((head - 1) % g.capacity) * g.slot_size
        want = (2 * head + 2) & _U64
        if words.load_u64(slot_off) != want:
            return
        frame_len = words.load_u32(slot_off + 8)
        metadata_len = words.load_u32(slot_off + 12)
        words.fence()
        if words.load_u64(slot_off) != want:
            return
        problem = slot_problem(g, frame_len, metadata_len)
        if problem is not None:
            raise corrupt_slot(self._name, problem)

    def _slot_error(self, slot_off: int, *, frame_len: int | None) -> FastLaneCorruptError:
        """The error for a complete slot whose frame is not the header's frame size."""
        if frame_len is None:
            frame_len = self._words.load_u32(slot_off + 8)
        metadata_len = self._words.load_u32(slot_off + 12)
        g = self._geometry
        problem = slot_problem(g, frame_len, metadata_len) or (
            f"a slot's frame_len did not match the header's {g.frame_bytes}-byte frames"
        )
        return corrupt_slot(self._name, problem)

    def latest_view(self) -> FastLaneFrameView | None:
        """The newest frame without copying it (see :class:`FastLaneFrameView`), or None."""
        words = self._live_words()
        if words is None:
            return None
        g = self._geometry
        frame_bytes = g.frame_bytes
        for _ in range(_TRIES):
            head = words.load_u64(OFF_HEAD)
            if head == 0:
                return None
            index = (head - 1) % g.capacity
            slot_off = HEADER.size + index * g.slot_size
            want = 2 * head + 2
            if words.load_u64(slot_off) == want:
                flen = words.load_u32(slot_off + 8)
                mlen = words.load_u32(slot_off + 12)
                fits = flen == frame_bytes and mlen <= g.metadata_cap
                moff = slot_off + self._metrics_off if self._metrics_off >= 0 else OFF_HUD
                metrics = _metrics_at(words, moff)
                meta = None
                if mlen and fits:
                    start = slot_off + SLOT_HEADER.size + frame_bytes
                    meta = bytes(self._mapping.mmap[start : start + mlen])  # type: ignore[union-attr]
                words.fence()
                if words.load_u64(slot_off) == want:
                    if not fits:
                        problem = slot_problem(self._geometry, flen, mlen)
                        raise corrupt_slot(self._name, problem or "bad slot lengths")
                    return FastLaneFrameView(
                        self._slot_array(index),
                        metrics,
                        meta,
                        head,
                        self._generation,
                        words,
                        slot_off,
                        want,
                    )
            self.retries += 1
        return None

    def _slot_array(self, index: int) -> np.ndarray:
        view = self._views[index]
        if view is None:
            assert self._mapping is not None
            g = self._geometry
            start = HEADER.size + index * g.slot_size + SLOT_HEADER.size
            flat = np.frombuffer(self._mapping.mmap, np.uint8, g.frame_bytes, start)
            view = flat.reshape(g.height, g.width, g.channels)
            view.flags.writeable = False
            self._views[index] = view
        return view

    def metrics(self) -> FastLaneMetrics:
        """The header's HUD copy (what version-1 readers show; not tied to any frame)."""
        return _metrics_at(self._require(), OFF_HUD)

    def _require(self) -> Any:
        if self._words is None:
            raise FastLaneError(f"FastLane reader for {self._name!r} is closed")
        return self._words

    # -- state ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def width(self) -> int:
        return self._geometry.width

    @property
    def height(self) -> int:
        return self._geometry.height

    @property
    def channels(self) -> int:
        return self._geometry.channels

    @property
    def capacity(self) -> int:
        return self._geometry.capacity

    @property
    def generation(self) -> int:
        """Generation of the ring attached to (0 for a version-1 writer's segment)."""
        return self._generation

    @property
    def head(self) -> int:
        """Frames published into the attached ring so far."""
        return int(self._require().load_u64(OFF_HEAD))

    @property
    def invalidated(self) -> bool:
        return bool(self._require().load_u32(OFF_FLAGS) & FLAG_INVALIDATED)

    def status(self) -> SegmentStatus:
        """Header and extension block of the attached segment, decoded."""
        self._require()
        assert self._mapping is not None
        return read_status(self._mapping)

    # -- lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        """Unmap the segment (never unlinks it). Views already handed out stay readable."""
        mapping = self._mapping
        if mapping is None:
            return
        self._mapping = None
        self._words = None
        self._views = []
        self.__dict__.pop("latest_frame", None)  # the class's methods raise "closed"
        self.__dict__.pop("read_latest_into", None)
        mapping.close()

    def __enter__(self) -> FastLaneReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
