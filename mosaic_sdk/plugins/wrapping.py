"""``maybe_wrap_env``: how worker code wraps its env for FastLane, through the plugin hook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mosaic_sdk.fastlane.environment import FastLaneSettings, read_fastlane_environment
from mosaic_sdk.plugins.fastlane_provider import wrap_env_through_hook


def maybe_wrap_env(
    env: Any,
    run_id: str | None = None,
    *,
    force: bool = False,
    environ: Mapping[str, str] | None = None,
    settings: FastLaneSettings | None = None,
) -> Any:
    """Wrap ``env`` (a gymnasium env, vector env or PettingZoo AEC env) with FastLane when
    FastLane is on, through the ``mosaic_fastlane_wrap_env`` hook; else return it as is.

    ``settings``: the worker's :func:`mosaic_sdk.fastlane.resolve_fastlane` decision (default:
    the environment decides). ``force=True`` wraps even when FastLane is off. ``run_id``
    defaults to ``MOSAIC_RUN_ID``.
    """
    if settings is None:
        settings = read_fastlane_environment(environ)
    if not (settings.enabled or force):
        return env
    rid = run_id or settings.run_id
    if not rid:
        raise ValueError(
            "FastLane is switched on but no run id is known: pass run_id= or set MOSAIC_RUN_ID"
        )
    return wrap_env_through_hook(env, rid, settings.as_hook_settings())


__all__ = ["maybe_wrap_env"]
