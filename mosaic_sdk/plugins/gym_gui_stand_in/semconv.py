"""The stand-in's ``gym_gui.telemetry.semconv``: the names of the FastLane environment
variables and modes that the platform's workers read (``TelemetryEnv``, ``VideoModes``,
``TelemetryModes``). The SDK's FastLane settings
(:func:`mosaic_sdk.fastlane.read_fastlane_environment`) read the same variables."""

from __future__ import annotations


class VideoModes:
    """FastLane video modes."""

    SINGLE = "single"
    GRID = "grid"
    OFF = "off"


class TelemetryModes:
    """Telemetry paths an operator chooses between."""

    FASTLANE_ONLY = "fastlane_only"
    UI_AND_DB = "ui_and_db"
    DB_ONLY = "db_only"


class TelemetryEnv:
    """Environment variables the platform sets for a worker's FastLane."""

    FASTLANE_ONLY = "GYM_GUI_FASTLANE_ONLY"
    FASTLANE_SLOT = "GYM_GUI_FASTLANE_SLOT"
    FASTLANE_VIDEO_MODE = "GYM_GUI_FASTLANE_VIDEO_MODE"
    FASTLANE_GRID_LIMIT = "GYM_GUI_FASTLANE_GRID_LIMIT"
    CLEANRL_INTERVAL_MS = "CLEANRL_FASTLANE_INTERVAL_MS"
    CLEANRL_MAX_DIM = "CLEANRL_FASTLANE_MAX_DIM"


__all__ = ["TelemetryEnv", "TelemetryModes", "VideoModes"]
