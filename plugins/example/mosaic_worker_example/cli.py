"""`python -m mosaic_worker_example --config PATH [--dry-run] [--worker-id ID] [-v]`.

All of the CLI contract (config loading, errors, signals, exit codes) comes from the SDK's
`worker_main`; the worker supplies its config model, its run function and a dry-run check.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.worker_cli import worker_main
from mosaic_worker_example.config import ExampleConfig
from mosaic_worker_example.plugin import describe
from mosaic_worker_example.runtime import interactive_session, run


def check_config(config: WorkerConfig) -> str:
    """Dry-run check: the env id must be registered with gymnasium."""
    import gymnasium

    assert isinstance(config, ExampleConfig)
    try:
        gymnasium.spec(config.env_id)
    except gymnasium.error.Error as exc:
        raise ValueError(
            f"env_id {config.env_id!r} is not a registered gymnasium env ({exc})"
        ) from None
    return f"{config.episodes} episode(s) of {config.env_id} with the {config.policy!r} policy"


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(
        config_model=ExampleConfig,
        run=run,
        interactive=interactive_session,
        capabilities=describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog="mosaic_worker_example",
    )


if __name__ == "__main__":
    sys.exit(main())
