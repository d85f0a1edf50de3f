"""The worker of docs/guides/metrics.md: its run function is the guide's snippet, which the
test writes to ``metrics_snippet.py`` on PYTHONPATH. Registered through MOSAIC_PLUGINS."""

from __future__ import annotations

import sys
from pathlib import Path

THIS = Path(__file__).resolve()


def _plugin():  # imported lazily: the child process needs no pluggy
    from mosaic_sdk import hookimpl
    from mosaic_sdk.contract import (
        LaunchCommand,
        WorkerCapabilities,
        WorkerConfig,
        WorkerMetadata,
    )

    class MetricsDemo:
        @hookimpl
        def mosaic_worker_describe(self):
            return (
                WorkerMetadata(name="metrics_demo", version="1.0"),
                WorkerCapabilities(worker_type="metrics_demo"),
            )

        @hookimpl
        def mosaic_worker_config_model(self):
            return WorkerConfig

        @hookimpl
        def mosaic_worker_launch_command(self, config_path, config, run_dir):
            return LaunchCommand(argv=(sys.executable, str(THIS), "--config", str(config_path)))

    return MetricsDemo


def __getattr__(name: str):
    if name == "MetricsDemo":
        return _plugin()
    raise AttributeError(name)


if __name__ == "__main__":
    from metrics_snippet import run

    from mosaic_sdk.contract import WorkerConfig
    from mosaic_sdk.worker_cli import worker_main

    sys.exit(worker_main(config_model=WorkerConfig, run=run, prog="metrics_demo"))
