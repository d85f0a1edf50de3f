"""FastLaneWriter: the single producer of a run's frame ring."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np

from mosaic_sdk.fastlane.layout import (
    EXTENSION,
    EXTENSION_MAGIC,
    EXTENSION_REVISION,
    HEADER,
    MAGIC,
    OFF_CAPACITY,
    OFF_HEAD,
    OFF_HUD,
    VERSION,
    Geometry,
    fmt_hash,
    segment_name,
)
from mosaic_sdk.fastlane.records import (
    FastLaneBusyError,
    FastLaneConfig,
    FastLaneError,
    FastLaneMetrics,
)
from mosaic_sdk.fastlane.segment import Mapping, inspect_segment, remove_stale
from mosaic_sdk.shm.processes import process_start_ticks
from mosaic_sdk.shm.segment import shm_unlink

_U8 = np.dtype(np.uint8)
_NO_METRICS = FastLaneMetrics()
_CREATE_ATTEMPTS = 20
#: Seconds between two checks that the segment's name still refers to the writer's segment.
NAME_CHECK_SECONDS = 0.25
#: Times the writer re-creates a segment another process shrank before it stops publishing.
MAX_SHRINKS = 3


def create_fastlane_name(run_id: str) -> str:
    """The shared-memory name of ``run_id``'s segment: ``mosaic.fastlane.<run_id>``, '/' -> '_'."""
    return segment_name(run_id)


def agent_stream_id(run_id: str, agent_index: int) -> str:
    """The FastLane stream id of the agent at ``agent_index`` (0-based, in the run's order of
    agents): ``<run_id>-w<agent_index + 1>``, what the platform's multi-stream grid attaches
    to for its cells 1..N. The run's own segment stays free for a frame of the whole scene
    (what the platform's per-agent tabs read). ``ValueError`` for a negative index or an
    empty run id.
    """
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
    if isinstance(agent_index, bool) or not isinstance(agent_index, int) or agent_index < 0:
        raise ValueError(
            f"agent_index must be an int >= 0 (the agent's position in the run's agents), "
            f"got {agent_index!r}"
        )
    return f"{run_id}-w{agent_index + 1}"


def _create_segment(
    name: str, geometry: Geometry, config: FastLaneConfig, generation: int, head: int = 0
) -> Mapping:
    """Create and initialise a segment; replaces a stale one, refuses a live writer's."""
    for _ in range(_CREATE_ATTEMPTS):
        try:
            mapping = Mapping.create(name, geometry.segment_size)
        except FileExistsError:
            status = inspect_segment(name)
            if status is not None and status.initialised and not status.stale:
                raise FastLaneBusyError(
                    f"FastLane segment {name!r} already has a live writer (pid "
                    f"{status.writer_pid}); a run has exactly one FastLane writer - close the "
                    "other writer or use another run id"
                ) from None
            remove_stale(name)
            continue
        break
    else:
        raise FastLaneError(f"could not create FastLane segment {name!r}: it keeps reappearing")
    buf = mapping.mmap
    pid = os.getpid()
    EXTENSION.pack_into(
        buf,
        geometry.extension_offset,
        EXTENSION_MAGIC,
        EXTENSION.size,
        EXTENSION_REVISION,
        pid,
        generation,
        process_start_ticks(pid),
        geometry.metrics_offset,
        0,
        time.time_ns(),
        0,
        0,
    )
    # capacity stays 0 ("not initialised") until everything else is in place.
    HEADER.pack_into(
        buf,
        0,
        MAGIC,
        VERSION,
        0,
        0,
        geometry.slot_size,
        geometry.payload_size,
        config.width,
        config.height,
        config.channels,
        fmt_hash(config.pixel_format),
        head,
        0,
        0.0,
        0.0,
        0.0,
    )
    mapping.words.store_u32(OFF_CAPACITY, geometry.capacity)
    return mapping


class FastLaneWriter:
    """Publishes frames of one run into its shared-memory ring (one writer per run).

    Create it with :meth:`create`. ``publish`` copies a frame into the next slot under the
    slot's seqlock together with its metrics; a frame of another size re-creates the ring under
    the next generation (attached readers follow). ``close`` marks the segment invalidated,
    ``unlink`` removes its name; as a context manager it does both.

    Nothing a reader does kills the writer's process. Before each frame it checks that the
    segment was not shrunk by another process (a store past its end would raise SIGBUS), and
    every :data:`NAME_CHECK_SECONDS` that its name was not removed (a version-1 reader's
    resource tracker unlinks it when that reader exits) or taken over; either way it re-creates
    the segment under the next generation. After :data:`MAX_SHRINKS` shrinks it stops with
    :class:`FastLaneError`. ``publish``, ``reconfigure``, ``close`` and ``unlink`` hold one lock,
    so a close from another thread waits for a frame being copied (a large frame is copied
    with the GIL released, and unmapping it under the copy would be a SIGSEGV).
    """

    def __init__(self, run_id: str, config: FastLaneConfig) -> None:
        self._lock = threading.RLock()
        self._shrinks = 0
        self._next_name_check = 0.0
        self._run_id = run_id
        self._name = segment_name(run_id)
        self._mapping: Mapping | None = None
        self._words: Any = None
        self._generation = 0
        self._frames = 0
        self._metrics = _NO_METRICS
        self._owner_pid = os.getpid()  # a forked child never removes its parent's segment
        self._open(config)

    @classmethod
    def create(cls, run_id: str, config: FastLaneConfig) -> FastLaneWriter:
        """Create the ring of ``run_id`` (replacing a stale segment; a live one is an error)."""
        return cls(run_id, config)

    # -- ring (re)creation ---------------------------------------------------------------
    def _open(self, config: FastLaneConfig) -> None:
        geometry = Geometry(
            config.width, config.height, config.channels, config.metadata_size, config.capacity
        )
        old = self._mapping
        if old is not None:
            old.unlink_if_mine()
        mapping = _create_segment(self._name, geometry, config, self._generation + 1)
        if old is not None:
            old.invalidate()  # readers see the flag only once the new ring is complete
            old.close()
        self._mapping = mapping
        self._words = mapping.words
        self._generation += 1
        self._next_name_check = time.monotonic() + NAME_CHECK_SECONDS
        self._config = config
        self._geometry = geometry
        self._head = 0
        # what publish needs, computed once (Geometry's properties compute on every access)
        self._ring = (geometry.capacity, geometry.slot_size, geometry.payload_size)
        self._metrics_off = geometry.metrics_offset
        self._shape = config.shape
        self._shape2 = (config.height, config.width) if config.channels == 1 else None

    def reconfigure(self, config: FastLaneConfig) -> None:
        """Re-create the ring for another frame shape under the next generation."""
        with self._lock:
            self._check_open()
            self._open(config)

    def _check_segment(self) -> None:
        """Re-create the segment when another process shrank it or took its name away."""
        mapping = self._mapping
        if mapping is None:
            return
        if not mapping.intact():
            self._shrinks += 1
            if self._shrinks > MAX_SHRINKS:
                size = mapping.current_size()
                mapping.unlink_if_mine()
                self.close()
                raise FastLaneError(
                    f"FastLane segment {self._name!r} was shrunk to {size} bytes by another "
                    f"process, {self._shrinks} times: the writer stops publishing (a viewer "
                    "must open the segment without creating or resizing it)"
                )
            self._open(self._config)
        elif time.monotonic() >= self._next_name_check:
            self._next_name_check = time.monotonic() + NAME_CHECK_SECONDS
            if not mapping.named():
                self._open(self._config)

    # -- publishing ----------------------------------------------------------------------
    def publish(
        self,
        frame: Any,
        *,
        metrics: FastLaneMetrics | None = None,
        metadata: bytes | None = None,
    ) -> int:
        """Publish one frame; returns its number in this generation (1, 2, ...).

        ``frame`` is an HxWxC (or HxW for 1 channel) uint8 numpy array, copied once straight
        into shared memory when C-contiguous, or bytes / a memoryview of exactly
        ``width*height*channels`` bytes. ``metrics`` travel with the frame (None repeats the
        previous ones). An array of another shape re-creates the ring (new generation).
        """
        with self._lock:
            return self._publish(frame, metrics, metadata)

    def _publish(self, frame: Any, metrics: FastLaneMetrics | None, metadata: bytes | None) -> int:
        if self._mapping is None:
            self._check_open()
        if type(frame) is np.ndarray:
            if frame.shape != self._shape or frame.dtype is not _U8:
                frame = self._adapt_array(frame)
        else:
            nbytes = memoryview(frame).nbytes
            if nbytes != self._geometry.frame_bytes:
                raise ValueError(
                    f"FastLane frame has {nbytes} bytes, the ring expects "
                    f"{self._geometry.frame_bytes} "
                    f"({self._config.height}x{self._config.width}x{self._config.channels}); "
                    "publish a numpy array of the new shape or call reconfigure()"
                )
        if metadata is not None and len(metadata) > self._config.metadata_size:
            raise ValueError(
                f"FastLane metadata has {len(metadata)} bytes, the ring allows "
                f"{self._config.metadata_size}; raise FastLaneConfig.metadata_size"
            )
        self._check_segment()
        words = self._words
        metrics = self._metrics = metrics or self._metrics
        head = self._head + 1
        capacity, slot_size, payload_cap = self._ring
        slot_off = HEADER.size + (self._head % capacity) * slot_size
        try:
            words.fastlane_write(
                slot_off,
                head,
                frame,
                metadata,
                payload_cap,
                slot_off + self._metrics_off,
                metrics.last_reward,
                metrics.rolling_return,
                metrics.step_rate_hz,
                OFF_HUD,
                OFF_HEAD,
            )
        except (BufferError, ValueError, TypeError):
            if type(frame) is np.ndarray and not frame.flags.c_contiguous:
                return self._publish(np.ascontiguousarray(frame), metrics, metadata)
            raise
        self._head = head
        self._frames += 1
        return head

    def _adapt_array(self, frame: np.ndarray) -> np.ndarray:
        self._check_open()
        if frame.dtype != _U8:
            raise TypeError(
                f"FastLane frames are uint8, got {frame.dtype}; convert with "
                "(frame * 255).clip(0, 255).astype(np.uint8) or frame.astype(np.uint8)"
            )
        if frame.shape == self._shape or frame.shape == self._shape2:
            return frame
        if frame.ndim == 2:
            frame = frame[:, :, None]
        config = FastLaneConfig.for_array(
            frame, capacity=self._config.capacity, metadata_size=self._config.metadata_size
        )
        self._open(config)
        return frame

    # -- state ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The segment's shared-memory name."""
        return self._name

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def config(self) -> FastLaneConfig:
        """The current ring's configuration (changes when a frame of another size arrives)."""
        return self._config

    @property
    def generation(self) -> int:
        """1 for the first ring; +1 each time the ring is re-created."""
        return self._generation

    @property
    def head(self) -> int:
        """Frames published into the current generation's ring."""
        return self._head

    @property
    def frames_published(self) -> int:
        """Frames published over all generations."""
        return self._frames

    @property
    def closed(self) -> bool:
        return self._mapping is None

    def _check_open(self) -> None:
        if self._mapping is None:
            raise FastLaneError(f"FastLane writer for {self._name!r} is closed")

    # -- lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        """Mark the segment invalidated (readers let go) and unmap it. Idempotent."""
        with self._lock:
            mapping = self._mapping
            if mapping is None:
                return
            self._mapping = None
            self._words = None
            if os.getpid() == self._owner_pid:
                mapping.invalidate()
            mapping.close()

    def unlink(self) -> None:
        """Remove the segment's name, if it still names this writer's segment. Idempotent.

        Does nothing in a process forked from the writer's (the parent still owns it)."""
        if os.getpid() != self._owner_pid:
            return
        with self._lock:
            mapping = self._mapping
            if mapping is not None:
                mapping.unlink_if_mine()
                return
            status = inspect_segment(self._name, settle=0.0)
            if status is not None and (status.writer_pid == os.getpid() and status.stale):
                shm_unlink(self._name)

    def __enter__(self) -> FastLaneWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlink()
        self.close()

    def __del__(self) -> None:
        try:
            if self._mapping is not None:
                self.unlink()
                self.close()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass
