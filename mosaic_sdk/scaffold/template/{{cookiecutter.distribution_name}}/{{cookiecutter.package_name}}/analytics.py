"""The run's manifest: ``analytics.json`` in the run directory, written when the run ends.

The platform and ``mosaic runs`` read it to show a run's outcome without replaying its
telemetry. It is written atomically (a reader never sees half a file).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import WORKER_TYPE
from .config import Config

ANALYTICS_FILE = "analytics.json"
ANALYTICS_SCHEMA = "mosaic." + WORKER_TYPE + ".analytics/1"


def summarize_returns(returns: Sequence[float]) -> dict[str, float | None]:
    """Mean, best and last episode return (None when no episode finished)."""
    if not returns:
        return {"mean_return": None, "best_return": None, "last_return": None}
    mean = sum(returns) / len(returns)
    return {
        "mean_return": None if math.isnan(mean) else mean,
        "best_return": max(returns),
        "last_return": returns[-1],
    }


def build_manifest(
    config: Config,
    *,
    returns: Sequence[float],
    steps: int,
    duration_seconds: float,
    status: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of one run as a JSON-ready dict."""
    return {
        "schema": ANALYTICS_SCHEMA,
        "worker_type": WORKER_TYPE,
        "run_id": config.run_id,
        "env_id": config.env_id,
        "seed": config.seed,
        "status": status,
        "episodes": len(returns),
        "steps": steps,
        "returns": list(returns),
        **summarize_returns(returns),
        "duration_seconds": round(duration_seconds, 6),
        **(extra or {}),
    }


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> Path:
    """Write ``manifest`` to ``run_dir/analytics.json`` atomically; returns the path."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / ANALYTICS_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
