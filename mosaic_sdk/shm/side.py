"""Side areas: one-writer byte areas for what does not fit a fixed row (see ``layout``).

An area is ``[count u64][pad to 64][data]`` (count 0: nothing to say); the lock-step sequence
words publish both, so no other ordering is needed.
"""

from __future__ import annotations

import numpy as np

from mosaic_sdk.shm.layout import SIDE_DATA


class SideAreaFull(ValueError):
    """A blob does not fit its side area."""


class SideArea:
    """One side area (a uint8 view of ``side_size`` bytes in the segment)."""

    def __init__(self, area: np.ndarray) -> None:
        self.area = area
        self.count = area[:8].view(np.uint64)
        self.capacity = int(area.size) - SIDE_DATA

    def fits(self, data: bytes) -> bool:
        """Whether ``data`` fits the area."""
        return len(data) <= self.capacity

    def too_big(self, data: bytes) -> SideAreaFull:
        """The error for a blob that does not fit."""
        return SideAreaFull(
            f"{len(data)} bytes of step data (infos, or observations of a space without a "
            f"fixed row) do not fit the side area of {self.capacity} bytes; create the "
            "ShmVectorEnv with a larger side_size"
        )

    def write(self, data: bytes) -> None:
        """Store ``data`` and its count (``SideAreaFull`` when it does not fit)."""
        if not self.fits(data):
            raise self.too_big(data)
        self.area[SIDE_DATA : SIDE_DATA + len(data)] = np.frombuffer(data, dtype=np.uint8)
        self.count[0] = len(data)

    def clear(self) -> None:
        """Mark the area empty."""
        self.count[0] = 0

    def read(self) -> bytes | None:
        """The area's data, or None when it is empty."""
        count = int(self.count[0])
        if not count:
            return None
        if count > self.capacity:
            raise ValueError(f"side area count {count} exceeds its {self.capacity} bytes (corrupt)")
        return self.area[SIDE_DATA : SIDE_DATA + count].tobytes()
