"""The stand-in's ``gym_gui.fastlane``: the names of
:mod:`~mosaic_sdk.plugins.gym_gui_stand_in.fastlane_buffer` (the SDK's FastLane writer and
reader, version-1 segments). ``buffer``, ``tiling`` and ``worker_helpers`` are served as its
submodules. Importing it loads numpy, as the SDK's FastLane does.
"""

from __future__ import annotations

from mosaic_sdk.plugins.gym_gui_stand_in.fastlane_buffer import (
    FastLaneConfig,
    FastLaneFrame,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneWriter,
    create_fastlane_name,
)

__all__ = [
    "FastLaneConfig",
    "FastLaneFrame",
    "FastLaneMetrics",
    "FastLaneReader",
    "FastLaneWriter",
    "create_fastlane_name",
]
