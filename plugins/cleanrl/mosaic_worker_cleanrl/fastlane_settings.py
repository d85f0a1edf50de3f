"""FastLane options of a run: the config's ``fastlane_*`` fields over the environment.

The SDK decides (``mosaic_sdk.fastlane.resolve_fastlane``, the one rule every worker
follows); this module only passes it the config's choices. The config's switch is
``fastlane`` (``true``/``false``; ``null`` follows the launcher's ``MOSAIC_FASTLANE=1`` /
``*_FASTLANE_ONLY=1``), and ``fastlane_only: true`` also switches FastLane on. A
``fastlane_*`` field the config sets wins over the variables (``*_FASTLANE_VIDEO_MODE``,
``*_FASTLANE_SLOT``, ``*_FASTLANE_GRID_LIMIT``, ``MOSAIC_FASTLANE_INTERVAL_MS`` then
``CLEANRL_FASTLANE_INTERVAL_MS``, ``MOSAIC_FASTLANE_MAX_DIM`` then
``CLEANRL_FASTLANE_MAX_DIM``). Video mode ``off`` means no frames at all. The result is the
``settings`` dict of the ``mosaic_fastlane_wrap_env`` hook.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from mosaic_sdk.fastlane import apply_fastlane_environment
from mosaic_sdk.fastlane import resolve_fastlane as sdk_resolve_fastlane
from mosaic_worker_cleanrl.config import CleanRLConfig

_FIELDS = {
    "fastlane_only": "fastlane_only",
    "fastlane_video_mode": "video_mode",
    "fastlane_slot": "slot",
    "fastlane_grid_limit": "grid_limit",
    "fastlane_interval_ms": "interval_ms",
    "fastlane_max_dim": "max_dim",
}


def resolve_fastlane(config: CleanRLConfig, environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The hook settings when FastLane is on for this run, else None."""
    given = config.model_fields_set
    overrides = {key: getattr(config, field) for field, key in _FIELDS.items() if field in given}
    choice = True if config.fastlane_only else config.fastlane
    settings = sdk_resolve_fastlane(choice, environ=environ, overrides=overrides)
    return settings.as_hook_settings() if settings.enabled else None


def export_fastlane(
    settings: dict[str, Any], config: CleanRLConfig, env: MutableMapping[str, str]
) -> None:
    """Write the resolved settings back (for tools and child processes), through the SDK's one
    writer of FastLane's variables (both spellings, the interval and the size limit)."""
    apply_fastlane_environment(
        env,
        fastlane_only=bool(config.fastlane_only),
        fastlane_slot=settings["slot"],
        video_mode=settings["video_mode"],
        grid_limit=settings["grid_limit"],
        interval_ms=settings["interval_ms"],
        max_dim=settings["max_dim"],
    )


__all__ = ["export_fastlane", "resolve_fastlane"]
