"""Side areas: one-writer byte areas for what does not fit a fixed row (see ``layout``).

An area is ``[count u64][pad to 64][data]``. The writer stores the data, then the count (0 =
nothing to say); the lock-step sequence words publish both, so no other ordering is needed.
"""

from __future__ import annotations

import numpy as np

from mosaic_sdk.shm.layout import SIDE_DATA


class SideAreaFull(ValueError):
    """A blob does not fit its side area."""


def capacity(area: np.ndarray) -> int:
    """Data bytes the area holds."""
    return int(area.size) - SIDE_DATA


def fits(area: np.ndarray, data: bytes) -> bool:
    """Whether ``data`` fits the area."""
    return len(data) <= capacity(area)


def too_big(area: np.ndarray, data: bytes) -> SideAreaFull:
    """The error for a blob that does not fit."""
    return SideAreaFull(
        f"{len(data)} bytes of step data (infos, or observations of a space without a fixed "
        f"row) do not fit the side area of {capacity(area)} bytes; create the ShmVectorEnv "
        "with a larger side_size"
    )


def write(area: np.ndarray, data: bytes) -> None:
    """Store ``data`` and its count (``SideAreaFull`` when it does not fit)."""
    if not fits(area, data):
        raise too_big(area, data)
    area[SIDE_DATA : SIDE_DATA + len(data)] = np.frombuffer(data, dtype=np.uint8)
    area[:8].view(np.uint64)[0] = len(data)


def clear(area: np.ndarray) -> None:
    """Mark the area empty."""
    area[:8].view(np.uint64)[0] = 0


def read(area: np.ndarray) -> bytes | None:
    """The area's data, or None when it is empty."""
    count = int(area[:8].view(np.uint64)[0])
    if not count:
        return None
    if count > capacity(area):
        raise ValueError(f"side area count {count} exceeds its {capacity(area)} bytes (corrupt)")
    return area[SIDE_DATA : SIDE_DATA + count].tobytes()
