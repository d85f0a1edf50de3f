"""Shared memory needed by a FastLane ring, ours beside the deployed layout.

    python benchmarks/fastlane/memory.py

The case of the issue: a 64-env vector env of 256x256 RGB frames tiled into one 8x8 grid
(2048x2048x3 per frame). Deployed: 128 slots of 16 + W*H*C bytes. Ours: 4 slots (the
default), each 64-byte aligned with its per-slot metrics, plus the 64-byte extension block.
Our figure is also checked against a real segment's size.
"""

from __future__ import annotations

import os
import uuid

from mosaic_sdk.fastlane import FastLaneConfig, FastLaneWriter
from mosaic_sdk.fastlane.layout import Geometry
from mosaic_sdk.fastlane.tiling import grid_shape

CASES = [
    ("64 envs 256x256, 8x8 grid", 64, 256, 256, 3),
    ("4 envs 256x256 (grid_limit=4)", 4, 256, 256, 3),
    ("1 env 84x84", 1, 84, 84, 3),
    ("1 env 1920x1080", 1, 1920, 1080, 3),
]


def main() -> None:
    head = f"{'case':<32}{'frame':>16}{'deployed (128)':>16}{'ours (4)':>12}{'ratio':>8}"
    print(head)
    print("-" * len(head))
    for label, n, w, h, c in CASES:
        rows, cols = grid_shape(n)
        fw, fh = cols * w, rows * h
        deployed = 80 + 128 * (16 + fw * fh * c)
        config = FastLaneConfig(width=fw, height=fh, channels=c)
        ours = Geometry(fw, fh, c, 0, config.capacity).segment_size
        rid = f"bench-mem-{uuid.uuid4().hex[:8]}"
        with FastLaneWriter.create(rid, config) as writer:
            real = os.fstat(writer._mapping.fd).st_size  # noqa: SLF001 - a benchmark's check
        assert real == ours, (real, ours)
        print(
            f"{label:<32}{f'{fw}x{fh}x{c}':>16}{deployed / 2**20:>13.1f} MiB"
            f"{ours / 2**20:>9.1f} MiB{deployed / ours:>7.0f}x"
        )


if __name__ == "__main__":
    main()
