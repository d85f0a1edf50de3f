"""The SDK's FastLane provider: the default ``mosaic_fastlane_wrap_env`` and the run clean-up."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pluggy

from mosaic_sdk.fastlane.segment import cleanup_stale_segment
from mosaic_sdk.hookspecs import hookimpl


@hookimpl(trylast=True)
def mosaic_fastlane_wrap_env(env: Any, run_id: str, settings: dict[str, Any]) -> Any:
    """Default provider: wrap ``env`` with FastLane's gymnasium wrapper."""
    # Imported here: every plugin manager loads this module; gymnasium only for a wrap.
    from mosaic_sdk.fastlane.wrapper import wrap_env

    return wrap_env(env, run_id, settings)


@hookimpl
def mosaic_run_cleanup(run_id: str, worker: str, run_dir: Path, exit_code: int | None) -> None:
    """Remove the run's FastLane segment if its writer is dead (SIGKILL included)."""
    cleanup_stale_segment(run_id)


_lock = threading.Lock()
_process_pm: pluggy.PluginManager | None = None


def fastlane_plugin_manager() -> pluggy.PluginManager:
    """The plugin manager worker code wraps envs through, one per process (made on first use);
    register a plugin on it to decorate every FastLane wrap in this process."""
    global _process_pm
    with _lock:
        if _process_pm is None:
            # Imported here: discovery (entry points, the stand-in) only when a wrap asks for it.
            from mosaic_sdk.plugins.discovery import create_plugin_manager

            _process_pm = create_plugin_manager()
        return _process_pm


def wrap_env_through_hook(
    env: Any,
    run_id: str,
    settings: dict[str, Any],
    *,
    pm: pluggy.PluginManager | None = None,
) -> Any:
    """Call ``mosaic_fastlane_wrap_env`` on ``pm`` (default :func:`fastlane_plugin_manager`);
    ``RuntimeError`` when no provider answers."""
    manager = pm if pm is not None else fastlane_plugin_manager()
    wrapped = manager.hook.mosaic_fastlane_wrap_env(env=env, run_id=run_id, settings=settings)
    if wrapped is None:
        raise RuntimeError(
            "FastLane is on but no mosaic_fastlane_wrap_env provider answered; register "
            "mosaic_sdk.plugins.fastlane_provider (or your own provider) on the plugin manager"
        )
    return wrapped
