"""The SDK's built-in FastLane plugin: the default env wrapper and the run clean-up.

The runner registers this module as a plugin. It is the only FastLane module that imports
pluggy (through ``mosaic_sdk.hookspecs``), so worker code that just publishes frames never
loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mosaic_sdk.fastlane.segment import cleanup_stale_segment
from mosaic_sdk.hookspecs import hookimpl


@hookimpl(trylast=True)
def mosaic_fastlane_wrap_env(env: Any, run_id: str, settings: dict[str, Any]) -> Any:
    """Default provider: wrap ``env`` with FastLane's gymnasium wrapper."""
    from mosaic_sdk.fastlane.wrapper import wrap_env

    return wrap_env(env, run_id, settings)


@hookimpl
def mosaic_run_cleanup(run_id: str, worker: str, run_dir: Path, exit_code: int | None) -> None:
    """Remove the run's FastLane segment if its writer is dead (SIGKILL included)."""
    cleanup_stale_segment(run_id)
