"""The platform's worker command line and config loading, as the stand-in's
``gym_gui.core.worker`` gives them."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from mosaic_sdk.job_descriptor import unwrap_job_descriptor
from mosaic_sdk.plugins.gym_gui_stand_in.logging_setup import configure_logging

T = TypeVar("T")

DEFAULT_GRPC_TARGET = "127.0.0.1:50055"


def extract_worker_config(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The worker config in ``payload``: the object under ``metadata.worker.config`` of a job
    descriptor (taking the descriptor's ``run_id`` when it has none), else ``payload``."""
    if not isinstance(payload, Mapping):
        raise TypeError(
            f"a worker config is a JSON object, got {type(payload).__name__}; write "
            '{"run_id": ..., ...} or {"metadata": {"worker": {"config": {...}}}}'
        )
    return unwrap_job_descriptor(payload)


def _require_from_dict(config_class: type) -> None:
    if not callable(getattr(config_class, "from_dict", None)):
        raise TypeError(
            f"{config_class.__name__} has no from_dict(); a worker config class needs a "
            "from_dict(data) classmethod"
        )


def load_worker_config_from_file(path: Path | str, config_class: type[T]) -> T:
    """Read the JSON file at ``path`` (flat or nested) and build ``config_class.from_dict``."""
    _require_from_dict(config_class)
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    return config_class.from_dict(extract_worker_config(payload))  # type: ignore[attr-defined, no-any-return]


class WorkerCLI:
    """Helpers a worker's ``cli.py`` builds its command line with."""

    @staticmethod
    def create_base_parser(prog: str, description: str) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(
            prog=prog,
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument(
            "--config", required=True, type=Path, help="worker config JSON (flat or nested)"
        )
        parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
        parser.add_argument("--dry-run", action="store_true", help="validate the config and exit")
        parser.add_argument("--worker-id", help="worker identifier (overrides the config's)")
        parser.add_argument("--grpc", action="store_true", help="reserved; telemetry is stdout")
        parser.add_argument("--grpc-target", default=DEFAULT_GRPC_TARGET, help="reserved")
        return parser

    @staticmethod
    def setup_logging(verbose: bool = False) -> None:
        """Log to stderr at DEBUG (``verbose``) or INFO."""
        configure_logging(logging.DEBUG if verbose else logging.INFO, log_to_file=False)

    @staticmethod
    def load_and_validate_config(path: Path | str, config_class: type[T]) -> T:
        """Load the config at ``path`` with ``config_class``. Raises ``FileNotFoundError``
        (no such file), ``TypeError`` (no ``from_dict``) or ``ValueError`` (anything else
        wrong, with the file named)."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"config file not found: {path}")
        _require_from_dict(config_class)
        try:
            return load_worker_config_from_file(path, config_class)
        except Exception as exc:
            raise ValueError(f"cannot load the worker config {path}: {exc}") from exc


__all__ = ["WorkerCLI", "extract_worker_config", "load_worker_config_from_file"]
