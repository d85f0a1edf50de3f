"""Compositing the frames of several environments into one FastLane frame."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def grid_shape(n: int) -> tuple[int, int]:
    """``(rows, cols)`` of the near-square grid for ``n`` frames: rows = ceil(sqrt(n)),
    cols = ceil(n / rows)."""
    if n <= 0:
        raise ValueError(f"grid_shape needs at least one frame, got {n}")
    rows = math.ceil(math.sqrt(n))
    return rows, math.ceil(n / rows)


def tile_frames(frames: Sequence[np.ndarray]) -> np.ndarray:
    """Tile same-shaped HxWxC (or HxW) frames row by row into one image, zero-padded.

    >>> tile_frames([np.full((2, 2, 3), i, np.uint8) for i in range(3)]).shape
    (4, 4, 3)
    """
    if len(frames) == 0:
        raise ValueError("tile_frames needs at least one frame")
    arrays = [np.asarray(f) for f in frames]
    first = arrays[0]
    for i, arr in enumerate(arrays):
        if arr.shape != first.shape or arr.dtype != first.dtype:
            raise ValueError(
                f"tile_frames: frame {i} has shape {arr.shape} {arr.dtype}, frame 0 has "
                f"{first.shape} {first.dtype}; all frames must match"
            )
    if first.ndim not in (2, 3):
        raise ValueError(f"tile_frames: frames must be HxW or HxWxC, got shape {first.shape}")
    rows, cols = grid_shape(len(arrays))
    h, w = first.shape[:2]
    out = np.zeros((rows * h, cols * w, *first.shape[2:]), dtype=first.dtype)
    for i, arr in enumerate(arrays):
        r, c = divmod(i, cols)
        out[r * h : (r + 1) * h, c * w : (c + 1) * w] = arr
    return out
