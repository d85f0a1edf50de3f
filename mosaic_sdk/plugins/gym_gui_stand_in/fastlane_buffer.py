"""The stand-in's ``gym_gui.fastlane.buffer``: the SDK's FastLane ring by the platform's names."""

from __future__ import annotations

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

__mosaic_stand_in__ = True

_MIN_CAPACITY, _MAX_CAPACITY = 2, 1024


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

    def _header(self) -> tuple[Any, ...]:
        return tuple(HEADER.unpack_from(self._mv, 0))

    @property
    def flags(self) -> int:
        return int(self._header()[2])

    @property
    def is_invalidated(self) -> bool:
        return bool(self.flags & FLAG_INVALIDATED)

    @property
    def capacity(self) -> int:
        return int(self._header()[3])

    @property
    def width(self) -> int:
        return int(self._header()[6])

    @property
    def height(self) -> int:
        return int(self._header()[7])

    @property
    def channels(self) -> int:
        return int(self._header()[8])

    @property
    def head(self) -> int:
        return int(self._header()[10])

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
        try:
            self._shm.unlink()
        except FileNotFoundError:
            pass


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
