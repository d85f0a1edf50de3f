{%- set pz = cookiecutter.env_family == "pettingzoo" -%}
"""The worker's plugin: the module the ``mosaic.workers`` entry point belongs to.

Each function marked ``@hookimpl`` answers one hook of ``mosaic_sdk.hookspecs``. Keep them
cheap: discovery calls ``mosaic_worker_describe`` for every installed worker.

The entry point names ``get_worker_metadata`` (below): the MOSAIC platform calls it and gets
the description in its own classes; the SDK registers this module's hooks.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.plugins import platform_factory

from . import WORKER_TYPE, __version__
from .config import Config

#: The entry point in pyproject.toml names this: ``... = "<package>.plugin:get_worker_metadata"``.
get_worker_metadata = platform_factory(__name__)
{%- if pz %}

#: The most agents a game of this worker has (the default env has two).
MAX_AGENTS = 2
{%- endif %}


@hookimpl
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    return describe()


def describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    """The worker's description (also handed to ``worker_main`` by ``cli.py``)."""
    metadata = WorkerMetadata(
        name={{ cookiecutter.worker_name|py_str }},
        version=__version__,
        description={{ cookiecutter.description|py_str }},
        author={{ cookiecutter.author|py_str }},
        upstream_library={{ ("pettingzoo" if pz else "gymnasium")|py_str }},
        license={{ cookiecutter.license|py_str }},
    )
    capabilities = WorkerCapabilities(
        worker_type=WORKER_TYPE,  # must equal the entry-point name in pyproject.toml
        supported_paradigms=({{ cookiecutter.paradigm|py_str }},),
        env_families=({{ cookiecutter.env_family|py_str }},),
{%- if pz %}
        action_spaces=("discrete",),
        observation_spaces=("vector",),
        max_agents=MAX_AGENTS,
        supports_self_play=True,  # config.shared_policy: one policy plays every agent
        # Each agent's step lines are numbered by its own steps (0, 1, 2...) in a game; the
        # conformance suite judges pause/resume and counts per agent accordingly.
        step_numbering="per_agent",
{%- else %}
        action_spaces=("discrete", "continuous"),
        observation_spaces=({{ '"discrete"' if cookiecutter.env_family == "toy_text" else '"vector"' }},),
        supports_fastlane={{ "True" if cookiecutter.include_fastlane else "False" }},
{%- endif %}
        # The SDK's control protocol: ctx.cancelled pauses the loop, checkpoint() saves.
        supports_pause_resume=True,
        supports_checkpointing=True,
{%- if pz and cookiecutter.include_fastlane %}
        # The board goes to the run's FastLane stream and to each agent's (runtime.make_env).
        supports_fastlane=True,
{%- endif %}
        control_protocol=1,
        estimated_memory_mb=256,
    )
    return metadata, capabilities


@hookimpl
def mosaic_worker_config_model() -> type[WorkerConfig]:
    return Config


@hookimpl
def mosaic_worker_launch_command(
    config_path: Path, config: WorkerConfig, run_dir: Path
) -> LaunchCommand:
    # The runner adds MOSAIC_RUN_ID and MOSAIC_RUN_DIR to the environment itself.
    return LaunchCommand(
        argv=(sys.executable, "-m", {{ cookiecutter.package_name|py_str }}, "--config", str(config_path))
    )


#: How long a conformance run lasts: long enough to observe streaming, heartbeats and a
#: SIGTERM in the middle of a run, even on a busy machine (the suite asks for >= 1 s).
CONFORMANCE_RUN_SECONDS = 1.5


@hookimpl
def mosaic_worker_conformance_config() -> dict[str, Any]:
    # Small and deterministic: the conformance suite runs the worker several times. The step
{%- if pz %}
    # delay is sized from the {{ "moves" if cookiecutter.paradigm == "turn_based" else "steps" }} such a run really makes with this worker's seeding.
{%- else %}
    # delay is sized from the steps such a run really takes in this env with this worker's
    # policy (measured: a CartPole episode lasts tens of steps, a FrozenLake one a few), so
    # that the run lasts CONFORMANCE_RUN_SECONDS whatever the env.
{%- endif %}
    from .runtime import count_steps

    {% if pz -%}
    base: dict[str, Any] = {"episodes": 3, "seed": 7}
    steps = count_steps(Config(run_id="conformance-sizing", {% if cookiecutter.include_fastlane %}fastlane=False, {% endif %}**base))
{%- else -%}
    base: dict[str, Any] = {"episodes": 3, "max_steps_per_episode": 40, "seed": 7}
    sizing = Config(run_id="conformance-sizing", {% if cookiecutter.include_fastlane %}fastlane=False, {% endif %}**base)
    steps = count_steps(sizing)
{%- endif %}
    delay_ms = 1000.0 * CONFORMANCE_RUN_SECONDS / max(1, steps)
    return {**base, "step_delay_ms": round(delay_ms, 1)}
{%- if not pz %}


@hookimpl
def mosaic_worker_make_env(config: WorkerConfig) -> Any:
    import gymnasium

    env_id = getattr(config, "env_id", {{ cookiecutter.env_id|py_str }})
    return gymnasium.make(env_id, render_mode="rgb_array")
{%- endif %}
