"""FastLane options of a run: the config's ``fastlane_*`` fields over the environment.

FastLane is on when the config says ``fastlane: true`` (or ``fastlane_only: true``), or, when
``fastlane`` is not set, when the launcher switched it on (``MOSAIC_FASTLANE=1`` or
``MOSAIC_FASTLANE_ONLY`` / ``GYM_GUI_FASTLANE_ONLY`` = 1). A field the config sets wins over
the variables (``*_FASTLANE_VIDEO_MODE``, ``*_FASTLANE_SLOT``, ``*_FASTLANE_GRID_LIMIT``,
``CLEANRL_FASTLANE_INTERVAL_MS``, ``CLEANRL_FASTLANE_MAX_DIM``). Video mode ``off`` means no
frames at all. The result is the ``settings`` dict of the ``mosaic_fastlane_wrap_env`` hook.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from cleanrl_worker.config import CleanRLConfig

_TRUE = {"1", "true", "yes", "on"}
_PREFIXES = ("MOSAIC_FASTLANE_", "GYM_GUI_FASTLANE_")


def _env(environ: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def _number(environ: Mapping[str, str], kind: type, *names: str) -> Any:
    raw = _env(environ, *names)
    if raw is None:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{names[0]}={raw!r} is not a valid {kind.__name__}") from None


def resolve_fastlane(config: CleanRLConfig, environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The hook settings when FastLane is on for this run, else None."""
    given = config.model_fields_set
    if config.fastlane is not None:
        enabled = config.fastlane or config.fastlane_only
    else:
        switches = [_env(environ, "MOSAIC_FASTLANE")] + [
            _env(environ, p + "ONLY") for p in _PREFIXES
        ]
        enabled = config.fastlane_only or any((s or "").lower() in _TRUE for s in switches)
    if not enabled:
        return None

    def pick(field: str, kind: type, *names: str) -> Any:
        if field in given:
            return getattr(config, field)
        found = _number(environ, kind, *names)
        return getattr(config, field) if found is None else found

    mode = pick("fastlane_video_mode", str, *(p + "VIDEO_MODE" for p in _PREFIXES))
    mode = str(mode).lower()
    if mode not in ("single", "grid", "off"):
        raise ValueError(f"FastLane video mode {mode!r} is not one of single, grid, off")
    if mode == "off":
        return None
    return {
        "video_mode": mode,
        "slot": pick("fastlane_slot", int, *(p + "SLOT" for p in _PREFIXES)),
        "grid_limit": pick("fastlane_grid_limit", int, *(p + "GRID_LIMIT" for p in _PREFIXES)),
        "interval_ms": pick(
            "fastlane_interval_ms",
            float,
            "CLEANRL_FASTLANE_INTERVAL_MS",
            "MOSAIC_FASTLANE_INTERVAL_MS",
        ),
        "max_dim": pick(
            "fastlane_max_dim", int, "CLEANRL_FASTLANE_MAX_DIM", "MOSAIC_FASTLANE_MAX_DIM"
        ),
    }


def export_fastlane(
    settings: dict[str, Any], config: CleanRLConfig, env: MutableMapping[str, str]
) -> None:
    """Write the resolved settings back in both spellings (for tools and child processes)."""
    values = {
        "ONLY": "1" if config.fastlane_only else "0",
        "SLOT": str(settings["slot"]),
        "VIDEO_MODE": settings["video_mode"],
        "GRID_LIMIT": str(settings["grid_limit"]),
    }
    for prefix in _PREFIXES:
        for key, value in values.items():
            env[prefix + key] = value
    env["MOSAIC_FASTLANE"] = "1"
    if settings.get("interval_ms") is not None:
        env["CLEANRL_FASTLANE_INTERVAL_MS"] = str(settings["interval_ms"])
    if settings.get("max_dim") is not None:
        env["CLEANRL_FASTLANE_MAX_DIM"] = str(settings["max_dim"])


__all__ = ["export_fastlane", "resolve_fastlane"]
