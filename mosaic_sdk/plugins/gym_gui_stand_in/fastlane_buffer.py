"""The stand-in's ``gym_gui.fastlane.buffer``: the SDK's FastLane ring by the platform's names."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from mosaic_sdk.fastlane import (
    FastLaneConfig,
    FastLaneFrame,
    FastLaneMetrics,
    FastLaneReader,
    create_fastlane_name,
)
from mosaic_sdk.fastlane import FastLaneWriter as _SdkWriter
from mosaic_sdk.fastlane.layout import FLAG_INVALIDATED, HEADER, OFF_FLAGS
from mosaic_sdk.shm.atomics import SharedWords

_MIN_CAPACITY, _MAX_CAPACITY = 2, 1024


def _header_field(index: int) -> Any:
    """A read-only property: field ``index`` of the segment's header, as an int."""
    return property(lambda self: int(HEADER.unpack_from(self._mv, 0)[index]))


class FastLaneWriter(_SdkWriter):
    """The SDK's writer; ``create`` also takes the platform's ``capacity`` keyword."""

    @classmethod
    def create(
        cls, run_id: str, config: FastLaneConfig, *, capacity: int | None = None
    ) -> FastLaneWriter:
        if capacity is not None:
            slots = min(_MAX_CAPACITY, max(_MIN_CAPACITY, int(capacity)))
            config = dataclasses.replace(config, capacity=slots)
        return cls(run_id, config)


class FastLaneBase:
    """A view of a FastLane segment's header, over a ``multiprocessing.shared_memory``
    segment a worker opened itself."""

    def __init__(self, shm: Any) -> None:
        self._shm = shm
        self._buffer = shm.buf
        self._mv = memoryview(self._buffer)
        if len(self._mv) < HEADER.size:
            raise ValueError(
                f"{getattr(shm, 'name', 'segment')} has {len(self._mv)} bytes, less than a "
                f"FastLane header ({HEADER.size})"
            )

    flags = _header_field(2)
    capacity = _header_field(3)
    width = _header_field(6)
    height = _header_field(7)
    channels = _header_field(8)
    head = _header_field(10)

    @property
    def is_invalidated(self) -> bool:
        return bool(self.flags & FLAG_INVALIDATED)

    def invalidate(self) -> None:
        """Set FLAG_INVALIDATED (readers detach and re-attach)."""
        words = SharedWords(self._mv)
        try:
            words.fetch_or_u32(OFF_FLAGS, FLAG_INVALIDATED)
        finally:
            words.release()

    def close(self) -> None:
        self._mv.release()
        self._shm.close()

    def unlink(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._shm.unlink()


__all__ = [
    "FLAG_INVALIDATED",
    "FastLaneBase",
    "FastLaneConfig",
    "FastLaneFrame",
    "FastLaneMetrics",
    "FastLaneReader",
    "FastLaneWriter",
    "create_fastlane_name",
]
