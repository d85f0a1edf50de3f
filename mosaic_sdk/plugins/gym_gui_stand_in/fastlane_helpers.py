"""The stand-in's ``gym_gui.fastlane.worker_helpers``: the SDK's
``apply_fastlane_environment(env, *, fastlane_only, fastlane_slot, video_mode, grid_limit)``,
which writes the FastLane variables in both spellings (``GYM_GUI_FASTLANE_*``, the platform's,
and ``MOSAIC_FASTLANE_*``) and returns ``env``."""

from __future__ import annotations

from mosaic_sdk.fastlane.environment import apply_fastlane_environment

__all__ = ["apply_fastlane_environment"]
