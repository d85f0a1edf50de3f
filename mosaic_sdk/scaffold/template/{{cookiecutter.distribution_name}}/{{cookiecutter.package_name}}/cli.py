{% if cookiecutter.env_family == "pettingzoo" %}{% include "pettingzoo/cli.py" %}{% else %}"""``python -m {{ cookiecutter.package_name }} --config PATH [--dry-run] [--worker-id ID] [-v]``.

The whole CLI contract (config loading, errors, signals, exit codes) comes from the SDK's
``worker_main``; this module supplies the config model, the run function and the dry-run check.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.worker_cli import worker_main

from .config import Config
from .plugin import describe
from .runtime import interactive_session, run


def check_config(config: WorkerConfig) -> str:
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


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(
        config_model=Config,
        run=run,
        interactive=interactive_session,
        capabilities=describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog={{ cookiecutter.package_name|py_str }},
    )


if __name__ == "__main__":
    sys.exit(main())
{% endif %}