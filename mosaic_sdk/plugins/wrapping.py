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
    """Wrap ``env`` with FastLane when FastLane is on; else return it as is.

    ``settings`` is the worker's decision from :func:`mosaic_sdk.fastlane.resolve_fastlane`
    (default: the environment decides, as :func:`mosaic_sdk.fastlane.read_fastlane_environment`).
    ``force=True`` wraps even when FastLane is off (the other settings still apply).
    ``run_id`` defaults to ``MOSAIC_RUN_ID``. Works on a ``gymnasium.Env``, on a
    ``gymnasium.vector.VectorEnv`` and on a turn-based PettingZoo AEC env (its board goes to
    the run's stream and to each agent's: :class:`mosaic_sdk.fastlane.FastLaneAECWrapper`).

    The env is wrapped through the ``mosaic_fastlane_wrap_env`` hook of the process's plugin
    manager (:func:`mosaic_sdk.plugins.fastlane_provider.wrap_env_through_hook`), so plugins
    registered there may decorate it. Use it where the worker builds its env:
    ``env = maybe_wrap_env(gymnasium.make(env_id, render_mode="rgb_array"))``.
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
