"""What a run sets up in the worker's own process before CleanRL's code runs: the telemetry
sink and the SDK's patches of gymnasium (:mod:`mosaic_sdk.instrument`), for the script and
the env subprocesses it starts, with what CleanRL adds to them: the gymnasium 0.29 layer for
upstream scripts, the MiniGrid/BabyAI ids, the curriculum env id."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from mosaic_sdk.instrument.env_telemetry import TelemetrySink
from mosaic_sdk.instrument.gym_patch import Instrumentation
from mosaic_sdk.instrument.subprocess_patch import PREFIX, child_variables
from mosaic_sdk.worker_cli import RunContext
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.curriculum_remote import CURRICULUM_VAR, register_remote
from mosaic_worker_cleanrl.env_families import register_env_families
from mosaic_worker_cleanrl.fastlane_settings import export_fastlane, resolve_fastlane
from mosaic_worker_cleanrl.gym_compat import install_compat
from mosaic_worker_cleanrl.legacy_gym import put_on_path

#: The variable that switches the gymnasium 0.29 layer on in env subprocesses.
GYM_COMPAT_VAR = PREFIX + "CLEANRL_GYM_COMPAT"
#: What the SDK's env-subprocess patch calls there (see :func:`prepare_env_subprocess`).
SUBPROCESS_SETUP = "mosaic_worker_cleanrl.run_setup:prepare_env_subprocess"


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
    (see :mod:`mosaic_sdk.instrument.subprocess_patch`), no other child does."""
    register_env_families()  # MiniGrid / BabyAI ids, when minigrid is installed
    settings = resolve_fastlane(config, os.environ)
    if settings is not None:
        export_fastlane(settings, config, os.environ)
    os.environ["MOSAIC_RUN_ID"] = config.run_id
    children = child_variables(
        render_frames=settings is not None,
        owner_pid=os.getpid(),
        steps=sink.steps_enabled,
        step_every=config.telemetry_step_every,
        step_rate=config.telemetry_step_rate,
        setup=SUBPROCESS_SETUP,
        extra={GYM_COMPAT_VAR: "1" if compat else "0"},
    )
    inst = Instrumentation(
        sink,
        config.run_id,
        fastlane_settings=settings,
        fastlane_hook=fastlane_hook() if settings is not None else None,
        patches=[install_compat] if compat else [],
        log=ctx.log,
        child_variables=children,
    )
    return inst.install()


def prepare_env_subprocess(inst: Instrumentation, variables: Mapping[str, str]) -> None:
    """In an env subprocess, before the SDK installs its patch there: the gymnasium 0.29
    layer (and the script's ``import gym``, to unpickle its env thunks), the env families
    (a spawned subprocess starts with gymnasium's ids only) and the curriculum env id."""
    if variables.get(GYM_COMPAT_VAR) == "1":
        put_on_path()
        inst.patches.append(install_compat)
    register_env_families()
    stage_file = variables.get(CURRICULUM_VAR)
    if stage_file:  # the curriculum env id, reading the worker's stage file
        register_remote(stage_file, inst.original_make)


__all__ = [
    "GYM_COMPAT_VAR",
    "SUBPROCESS_SETUP",
    "fastlane_hook",
    "install_instrumentation",
    "make_sink",
    "prepare_env_subprocess",
]
