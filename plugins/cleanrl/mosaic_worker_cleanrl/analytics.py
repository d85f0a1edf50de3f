"""The run's ``analytics.json`` manifest, and what goes into it.

Written atomically into the run directory at the end of every run (completed, failed or
cancelled), in the SDK's one manifest format (``mosaic_sdk.analytics``, schema
``mosaic.analytics/1``): ``returns`` holds the last episodes' returns (the sink's window, 20
by default) and ``mean_return`` their mean; ``checkpoints``, ``tensorboard_dirs`` and ``log``
(``algorithm.log``) are filled in. What only CleanRL has goes in ``extra``:

    {"mode": "train", "evaluation": {...} (policy_eval), "curriculum": {...} (curriculum)}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from mosaic_sdk.analytics import AnalyticsManifest
from mosaic_sdk.analytics import write_analytics as write_manifest

if TYPE_CHECKING:
    from mosaic_sdk.instrument.env_telemetry import TelemetrySink
    from mosaic_worker_cleanrl.config import CleanRLConfig

WORKER_TYPE = "cleanrl"
_STEP_IN_NAME = re.compile(r"(\d+)")


class _CheckpointPath(TypedDict):
    path: str


class CheckpointEntry(_CheckpointPath, total=False):
    """A checkpoint found in the run directory: its path, and the step its name gives."""

    step: int


def collect_checkpoints(run_dir: Path, since: float = 0.0) -> list[CheckpointEntry]:
    """Checkpoints written under ``run_dir`` since ``since`` (unix seconds): our PPO's
    ``checkpoints/*.pt`` and upstream scripts' ``checkpoints/*.cleanrl_model`` (where the
    worker puts them) or ``runs/**/*.cleanrl_model`` (a script run without the worker's
    redirect)."""
    found = []
    patterns = ("checkpoints/*.pt", "checkpoints/*.cleanrl_model", "runs/**/*.cleanrl_model")
    for pattern in patterns:
        for path in sorted(run_dir.glob(pattern)):
            if path.stat().st_mtime + 1e-3 < since:
                continue
            entry: CheckpointEntry = {"path": str(path)}
            numbers = _STEP_IN_NAME.findall(path.stem)
            if path.suffix == ".pt" and numbers:
                entry["step"] = int(numbers[-1])
            found.append(entry)
    return found


def tensorboard_dirs(run_dir: Path) -> list[str]:
    """Directories under ``run_dir`` that hold TensorBoard event files."""
    dirs = {str(p.parent) for p in run_dir.rglob("events.out.tfevents.*")}
    return sorted(dirs)


def log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of the script's log (empty when there is none)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def write_analytics(
    run_dir: Path,
    config: CleanRLConfig,
    sink: TelemetrySink,
    checkpoints: list[CheckpointEntry],
    duration: float,
    status: str,
    extra: Mapping[str, object] | None = None,
) -> Path:
    """Write ``analytics.json`` (atomically) and return its path."""
    # worker-specific data may hold values JSON has no type for (paths, numpy scalars)
    worker_data = json.loads(json.dumps({"mode": config.mode, **(extra or {})}, default=str))
    manifest = AnalyticsManifest.build(
        run_id=config.run_id,
        worker_type=WORKER_TYPE,
        status=status,
        returns=list(sink.returns),
        episodes=sink.episodes,
        steps=sink.total_steps,
        duration_seconds=duration,
        env_id=config.env_id,
        algo=config.algo,
        seed=config.seed,
        checkpoints=checkpoints,
        tensorboard_dirs=tensorboard_dirs(run_dir),
        log="algorithm.log",
        extra=worker_data,
    )
    return write_manifest(run_dir, manifest)


__all__ = [
    "CheckpointEntry",
    "WORKER_TYPE",
    "collect_checkpoints",
    "log_tail",
    "tensorboard_dirs",
    "write_analytics",
]
