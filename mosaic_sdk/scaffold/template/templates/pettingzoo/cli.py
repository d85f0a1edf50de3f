"""``python -m {{ cookiecutter.package_name }} --config PATH [--dry-run] [--worker-id ID] [-v]``.

The whole CLI contract (config loading, errors, signals, exit codes) comes from the SDK's
``worker_main``; this module supplies the config model, the run function and the dry-run check.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.worker_cli import worker_main

from .config import Config
from .plugin import describe
from .runtime import {{ "interactive_session, run" if cookiecutter.paradigm == "turn_based" else "run" }}

#: The constructor a PettingZoo env module must have for this worker's loop.
CONSTRUCTOR = {{ ("env" if cookiecutter.paradigm == "turn_based" else "parallel_env")|py_str }}


def check_config(config: WorkerConfig) -> str:
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
            "{{ 'AEC (turn-based)' if cookiecutter.paradigm == 'turn_based' else 'parallel' }} PettingZoo envs"
        )
    return f"{config.episodes} game(s) of {config.env_id}"


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(
        config_model=Config,
        run=run,
{%- if cookiecutter.paradigm == "turn_based" %}
        interactive=interactive_session,
{%- endif %}
        capabilities=describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog={{ cookiecutter.package_name|py_str }},
    )


if __name__ == "__main__":
    sys.exit(main())
