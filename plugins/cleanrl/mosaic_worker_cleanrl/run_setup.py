"""What a run sets up in the worker's own process before CleanRL's code runs: the telemetry
sink and the patches of gymnasium (for the script, and the env subprocesses it starts)."""

from __future__ import annotations

import os
from typing import Any

from mosaic_sdk.worker_cli import RunContext
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.env_families import register_env_families
from mosaic_worker_cleanrl.env_telemetry import TelemetrySink
from mosaic_worker_cleanrl.fastlane_settings import export_fastlane, resolve_fastlane
from mosaic_worker_cleanrl.instrument import Instrumentation
from mosaic_worker_cleanrl.subprocess_patch import child_variables


def fastlane_hook() -> Any:
    """The ``mosaic_fastlane_wrap_env`` hook of the process's FastLane plugin manager (the
    one ``maybe_wrap_env`` uses, so plugins registered there see CleanRL's envs too)."""
    # Imported here: the plugin floor (pluggy, entry points) only for a run with FastLane on.
    from mosaic_sdk.plugins.fastlane_provider import fastlane_plugin_manager

    pm = fastlane_plugin_manager()

    def call(env: Any, run_id: str, settings: dict[str, Any]) -> Any:
        return pm.hook.mosaic_fastlane_wrap_env(env=env, run_id=run_id, settings=settings)

    return call


def make_sink(ctx: RunContext, config: CleanRLConfig) -> TelemetrySink:
    return TelemetrySink(
        ctx.emitter,
        steps=config.telemetry_steps and not config.fastlane_only,
        step_every=config.telemetry_step_every,
        step_rate=config.telemetry_step_rate,
    )


def install_instrumentation(
    ctx: RunContext, config: CleanRLConfig, sink: TelemetrySink, compat: bool
) -> Instrumentation:
    """Patches for this process; env subprocesses its ``AsyncVectorEnv`` starts get them too
    (see :mod:`mosaic_worker_cleanrl.subprocess_patch`), no other child does."""
    register_env_families()  # MiniGrid / BabyAI ids, when minigrid is installed
    settings = resolve_fastlane(config, os.environ)
    if settings is not None:
        export_fastlane(settings, config, os.environ)
    os.environ["MOSAIC_RUN_ID"] = config.run_id
    children = child_variables(
        compat=compat,
        render_frames=settings is not None,
        owner_pid=os.getpid(),
        steps=sink.steps_enabled,
        step_every=config.telemetry_step_every,
        step_rate=config.telemetry_step_rate,
    )
    inst = Instrumentation(
        sink,
        config.run_id,
        fastlane_settings=settings,
        fastlane_hook=fastlane_hook() if settings is not None else None,
        compat=compat,
        log=ctx.log,
        child_variables=children,
    )
    return inst.install()


__all__ = ["fastlane_hook", "install_instrumentation", "make_sink"]
