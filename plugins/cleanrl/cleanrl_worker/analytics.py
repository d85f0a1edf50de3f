"""The run's ``analytics.json`` manifest, and what goes into it.

Written atomically into the run directory at the end of every run (completed, failed or
cancelled)::

    {"schema": "mosaic.cleanrl.analytics/1", "run_id": ..., "algo": ..., "env_id": ...,
     "mode": ..., "status": "completed", "duration_seconds": 12.3,
     "tensorboard_dirs": [...], "checkpoints": [{"path": ..., "step": ...}],
     "episodes": 57, "steps": 100000, "final_mean_return": 231.4, "returns_tail": [...],
     "log": "algorithm.log"}

``final_mean_return`` is the mean of the last 20 episodes (null without episodes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ANALYTICS_SCHEMA = "mosaic.cleanrl.analytics/1"
_STEP_IN_NAME = re.compile(r"(\d+)")


def collect_checkpoints(run_dir: Path, since: float = 0.0) -> list[dict[str, Any]]:
    """Checkpoints written under ``run_dir`` since ``since`` (unix seconds): our PPO's
    ``checkpoints/*.pt`` and upstream scripts' ``runs/**/*.cleanrl_model``."""
    found = []
    patterns = ("checkpoints/*.pt", "runs/**/*.cleanrl_model")
    for pattern in patterns:
        for path in sorted(run_dir.glob(pattern)):
            if path.stat().st_mtime + 1e-3 < since:
                continue
            entry: dict[str, Any] = {"path": str(path)}
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
    config: Any,
    sink: Any,
    checkpoints: list[dict[str, Any]],
    duration: float,
    status: str,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``analytics.json`` (atomically) and return its path."""
    data: dict[str, Any] = {
        "schema": ANALYTICS_SCHEMA,
        "run_id": config.run_id,
        "algo": config.algo,
        "env_id": config.env_id,
        "mode": config.mode,
        "seed": config.seed,
        "status": status,
        "duration_seconds": round(duration, 3),
        "tensorboard_dirs": tensorboard_dirs(run_dir),
        "checkpoints": checkpoints,
        "episodes": sink.episodes,
        "steps": sink.total_steps,
        "final_mean_return": sink.mean_return(),
        "returns_tail": list(sink.returns),
        "log": "algorithm.log",
        **(extra or {}),
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "analytics.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", "utf-8")
    tmp.replace(path)
    return path


__all__ = [
    "ANALYTICS_SCHEMA",
    "collect_checkpoints",
    "log_tail",
    "tensorboard_dirs",
    "write_analytics",
]
