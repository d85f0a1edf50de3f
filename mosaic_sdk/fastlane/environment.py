"""FastLane's environment variables: writing them for a worker launch, reading them inside it."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import asdict, dataclass
from typing import Any

VIDEO_MODES = ("single", "grid", "off")
DEFAULT_INTERVAL_MS = 16.0
DEFAULT_GRID_LIMIT = 4
_PREFIXES = ("MOSAIC_FASTLANE_", "GYM_GUI_FASTLANE_")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class FastLaneSettings:
    """FastLane options of one worker, as read from its environment.

    ``interval_ms``: minimum time between two published frames (no ``render()`` in between);
    ``max_dim``: frames larger than this on either side are downscaled (0 = never).
    """

    enabled: bool = False
    fastlane_only: bool = False
    video_mode: str = "single"
    slot: int = 0
    grid_limit: int = DEFAULT_GRID_LIMIT
    interval_ms: float = DEFAULT_INTERVAL_MS
    max_dim: int = 0
    run_id: str | None = None

    def __post_init__(self) -> None:
        mode = str(self.video_mode).lower()
        if mode not in VIDEO_MODES:
            raise ValueError(
                f"FastLane video_mode must be one of {VIDEO_MODES}, got {self.video_mode!r}"
            )
        object.__setattr__(self, "video_mode", mode)
        if self.slot < 0:
            raise ValueError(f"FastLane slot must be >= 0, got {self.slot}")
        if self.grid_limit < 1:
            raise ValueError(f"FastLane grid_limit must be >= 1, got {self.grid_limit}")
        if self.interval_ms < 0:
            raise ValueError(f"FastLane interval_ms must be >= 0, got {self.interval_ms}")
        if self.max_dim < 0:
            raise ValueError(f"FastLane max_dim must be >= 0 (0 = no limit), got {self.max_dim}")

    def as_hook_settings(self) -> dict[str, Any]:
        """The ``settings`` dict of the ``mosaic_fastlane_wrap_env`` hook."""
        d = asdict(self)
        return {k: d[k] for k in ("video_mode", "slot", "grid_limit", "interval_ms", "max_dim")}


def apply_fastlane_environment(
    env: MutableMapping[str, Any],
    *,
    fastlane_only: bool,
    fastlane_slot: int,
    video_mode: str = "single",
    grid_limit: int = DEFAULT_GRID_LIMIT,
    interval_ms: float | None = None,
    max_dim: int | None = None,
    switch: bool = True,
) -> MutableMapping[str, Any]:
    """Write FastLane's variables into ``env`` (a launch environment) in both spellings.

    This is the one writer of FastLane's variables in the SDK and its workers (a test scans
    every other module for one). ``*_FASTLANE_ONLY``, ``_SLOT``, ``_VIDEO_MODE`` and
    ``_GRID_LIMIT`` are written as ``GYM_GUI_FASTLANE_*`` (the platform's) and
    ``MOSAIC_FASTLANE_*``; ``interval_ms`` and ``max_dim``, when given, as
    ``MOSAIC_FASTLANE_INTERVAL_MS`` / ``MOSAIC_FASTLANE_MAX_DIM`` (the platform has none: its
    CleanRL worker's ``CLEANRL_FASTLANE_*`` are only read). With ``switch`` (the default),
    ``MOSAIC_FASTLANE`` is set to ``1`` (``0`` when ``video_mode`` is ``off``) so that the
    worker publishes frames even when the slow lane stays on; ``switch=False`` writes only the
    variables the platform's launcher writes (what a worker must obey under the platform).
    Raises ``ValueError`` for a setting :class:`FastLaneSettings` refuses. Returns ``env``.
    """
    settings = FastLaneSettings(
        enabled=True,
        fastlane_only=bool(fastlane_only),
        video_mode=video_mode,
        slot=int(fastlane_slot),
        grid_limit=int(grid_limit),
        interval_ms=DEFAULT_INTERVAL_MS if interval_ms is None else interval_ms,
        max_dim=0 if max_dim is None else max_dim,
    )
    values = {
        "ONLY": "1" if settings.fastlane_only else "0",
        "SLOT": str(settings.slot),
        "VIDEO_MODE": settings.video_mode,
        "GRID_LIMIT": str(settings.grid_limit),
    }
    env.update({prefix + key: value for prefix in _PREFIXES for key, value in values.items()})
    if interval_ms is not None:
        env["MOSAIC_FASTLANE_INTERVAL_MS"] = str(interval_ms)
    if max_dim is not None:
        env["MOSAIC_FASTLANE_MAX_DIM"] = str(max_dim)
    if switch:
        env["MOSAIC_FASTLANE"] = "0" if settings.video_mode == "off" else "1"
    return env


def _lookup(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = environ.get(name)
        if value is not None and value.strip() != "":
            return name, value.strip()
    return None


def _flag(environ: Mapping[str, str], *names: str) -> bool:
    name, value = _lookup(environ, *names) or ("", "")
    if value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise ValueError(f"{name}={value!r} is not a switch; use 1 or 0")


def _number(environ: Mapping[str, str], kind: type, default: Any, *names: str) -> Any:
    found = _lookup(environ, *names)
    if found is None:
        return default
    name, value = found
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a valid {kind.__name__}") from None


def read_fastlane_environment(environ: Mapping[str, str] | None = None) -> FastLaneSettings:
    """Read FastLane's settings from ``environ`` (default ``os.environ``), either spelling.

    The same as ``resolve_fastlane(None, environ=environ)``: no config choice, the variables
    decide.
    """
    return resolve_fastlane(None, environ=environ)


#: The settings a worker's own config may give to :func:`resolve_fastlane` (``overrides``).
OVERRIDABLE = ("fastlane_only", "video_mode", "slot", "grid_limit", "interval_ms", "max_dim")


def resolve_fastlane(
    config: bool | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> FastLaneSettings:
    """Decide whether FastLane is on for this worker, and with which settings.

    ``config`` is the worker config's own switch: ``True`` turns FastLane on, ``False`` off,
    ``None`` follows the environment (``MOSAIC_FASTLANE=1`` or ``*_FASTLANE_ONLY=1``).
    ``overrides`` maps names of :data:`OVERRIDABLE` to values the worker's config set
    explicitly; a value that is not ``None`` wins over the variable. Video mode ``off`` turns
    FastLane off in every case. ``environ`` defaults to ``os.environ``.

    Raises ``ValueError`` naming the variable or setting when a value is not valid.
    """
    env = os.environ if environ is None else environ
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(given) - set(OVERRIDABLE))
    if unknown:
        raise ValueError(f"unknown FastLane setting(s) {unknown}; expected some of {OVERRIDABLE}")

    def names(key: str) -> tuple[str, ...]:
        return tuple(prefix + key for prefix in _PREFIXES)

    env_only = _flag(env, *names("ONLY"))
    only = bool(given["fastlane_only"]) if "fastlane_only" in given else env_only
    if "video_mode" in given:
        mode = str(given["video_mode"]).lower()
    else:
        found_mode = _lookup(env, *names("VIDEO_MODE"))
        mode = found_mode[1].lower() if found_mode else "single"
        if found_mode and mode not in VIDEO_MODES:
            raise ValueError(f"{found_mode[0]}={found_mode[1]!r} is not one of {VIDEO_MODES}")
    # The launcher's switches count whatever the config says about the slow lane.
    switched_on = config if config is not None else (_flag(env, "MOSAIC_FASTLANE") or env_only)

    def setting(key: str, kind: type, default: Any, *variables: str) -> Any:
        return given[key] if key in given else _number(env, kind, default, *variables)

    return FastLaneSettings(
        enabled=bool(switched_on) and mode != "off",
        fastlane_only=only,
        video_mode=mode,
        slot=setting("slot", int, 0, *names("SLOT")),
        grid_limit=setting("grid_limit", int, DEFAULT_GRID_LIMIT, *names("GRID_LIMIT")),
        interval_ms=setting(
            "interval_ms",
            float,
            DEFAULT_INTERVAL_MS,
            "MOSAIC_FASTLANE_INTERVAL_MS",
            "CLEANRL_FASTLANE_INTERVAL_MS",
        ),
        max_dim=setting("max_dim", int, 0, "MOSAIC_FASTLANE_MAX_DIM", "CLEANRL_FASTLANE_MAX_DIM"),
        run_id=env.get("MOSAIC_RUN_ID") or None,
    )


def use_headless_video(environ: MutableMapping[str, str] | None = None) -> bool:
    """Without a display, point SDL (pygame: gymnasium's toy-text, classic-control and box2d
    renderers) at its ``dummy`` video driver; True when it did. It renders the same
    ``rgb_array`` pixels without SDL's ``XDG_RUNTIME_DIR is invalid`` line on stderr. Left
    alone: a user's ``SDL_VIDEODRIVER``, and ``DISPLAY``/``WAYLAND_DISPLAY`` (a desktop)."""
    env = os.environ if environ is None else environ
    if env.get("SDL_VIDEODRIVER") or env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return False
    env["SDL_VIDEODRIVER"] = "dummy"
    return True
