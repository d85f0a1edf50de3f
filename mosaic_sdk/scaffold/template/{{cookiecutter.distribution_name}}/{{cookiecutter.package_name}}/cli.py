{%- set pz = cookiecutter.env_family == "pettingzoo" %}
{%- set tb = cookiecutter.paradigm == "turn_based" -%}
"""``python -m {{ cookiecutter.package_name }} --config PATH [--dry-run] [--worker-id ID] [-v]``.

The whole CLI contract (config loading, errors, signals, exit codes) comes from the SDK's
``worker_main``; this module supplies the config model, the run function and the dry-run check.
"""

from __future__ import annotations
{% if pz %}
import importlib
{%- endif %}
import sys
from collections.abc import Sequence

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.worker_cli import worker_main

from .config import Config
from .plugin import describe
from .runtime import {{ "run" if pz and not tb else "interactive_session, run" }}
{%- if pz %}

#: The constructor a PettingZoo env module must have for this worker's loop.
CONSTRUCTOR = {{ ("env" if tb else "parallel_env")|py_str }}
{%- endif %}


def check_config(config: WorkerConfig) -> str:
{%- if pz %}
    """Dry-run check: ``env_id`` is a PettingZoo env module this loop can play. Returns a
    summary."""
    assert isinstance(config, Config)
    try:
        module = importlib.import_module(config.env_id)
    except ImportError as exc:
        raise ValueError(
            f"env_id {config.env_id!r} cannot be imported ({exc}); use the module of a "
            "PettingZoo env, e.g. {{ cookiecutter.env_id }}"
        ) from None
    if not callable(getattr(module, CONSTRUCTOR, None)):
        raise ValueError(
            f"env_id {config.env_id!r} has no {CONSTRUCTOR}(): this worker plays "
            "{{ 'AEC (turn-based)' if tb else 'parallel' }} PettingZoo envs"
        )
    return f"{config.episodes} game(s) of {config.env_id}"
{%- else %}
    """Dry-run check: the env id must be registered with gymnasium. Returns a summary."""
    import gymnasium

    assert isinstance(config, Config)
    try:
        gymnasium.spec(config.env_id)
    except gymnasium.error.Error as exc:
        raise ValueError(
            f"env_id {config.env_id!r} is not a registered gymnasium env ({exc})"
        ) from None
    return f"{config.episodes} episode(s) of {config.env_id}"
{%- endif %}


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(
        config_model=Config,
        run=run,
{%- if not pz or tb %}
        interactive=interactive_session,
{%- endif %}
        capabilities=describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog={{ cookiecutter.package_name|py_str }},
    )


if __name__ == "__main__":
    sys.exit(main())
