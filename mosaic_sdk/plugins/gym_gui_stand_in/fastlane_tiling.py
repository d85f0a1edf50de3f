"""The stand-in's ``gym_gui.fastlane.tiling``: the SDK's ``tile_frames`` (rows =
ceil(sqrt(n)), cols = ceil(n / rows), zero padding, as Stable-Baselines3 tiles)."""

from __future__ import annotations

from mosaic_sdk.fastlane.tiling import tile_frames

__all__ = ["tile_frames"]
