"""``eval_summary.json``: the live summary of a ``policy_eval`` run, in its run directory.

``policy_eval`` plays its episodes in batches of ``eval_batch_size``. After each batch the
worker emits a ``policy_eval_batch`` lifecycle event and refreshes this file, at most once a
second (the platform's FastLane view in ``policy_eval`` mode reloads it every second), and
always once more when the run ends. The file is replaced atomically (temporary file, then
rename): a reader never sees half of it. Plain standard library; no torch.

Fields: ``schema`` (:data:`EVAL_SUMMARY_SCHEMA`), ``run_id``, ``env_id``, ``policy_path``,
``status`` (``running``, ``completed``, ``cancelled``, ``failed``), ``batch_count``,
``batch_size``, ``episodes``, ``episodes_planned``, ``avg_return``, ``min_return``,
``max_return`` (over every episode so far; ``null`` before the first), ``last_batch``
(``index``, ``episodes``, ``avg_return``, ``min_return``, ``max_return``) and ``updated_at``
(Unix seconds).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EVAL_SUMMARY_SCHEMA = "mosaic.cleanrl.eval_summary/1"
FILE_NAME = "eval_summary.json"


def return_stats(returns: Sequence[float]) -> dict[str, float | None]:
    """``avg_return`` / ``min_return`` / ``max_return`` of ``returns`` (``None`` when empty)."""
    if not returns:
        return {"avg_return": None, "min_return": None, "max_return": None}
    return {"avg_return": statistics.fmean(returns), "min_return": min(returns),
            "max_return": max(returns)}  # fmt: skip


class EvalSummary:
    """Accumulates batches and writes :data:`FILE_NAME` (throttled to ``min_interval``)."""

    def __init__(
        self,
        run_dir: Path,
        *,
        run_id: str,
        env_id: str,
        policy_path: str,
        batch_size: int,
        episodes_planned: int,
        min_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(run_dir) / FILE_NAME
        self.header = {"schema": EVAL_SUMMARY_SCHEMA, "run_id": run_id, "env_id": env_id,
                       "policy_path": policy_path, "batch_size": batch_size,
                       "episodes_planned": episodes_planned}  # fmt: skip
        self.min_interval = min_interval
        self._clock = clock
        self._last_write: float | None = None
        self.returns: list[float] = []
        self.batches = 0
        self.last_batch: dict[str, Any] | None = None
        self.writes = 0

    def snapshot(self, status: str) -> dict[str, Any]:
        return {
            **self.header,
            "status": status,
            "batch_count": self.batches,
            "episodes": len(self.returns),
            **return_stats(self.returns),
            "last_batch": self.last_batch,
            "updated_at": time.time(),
        }

    def add_batch(self, returns: Sequence[float]) -> dict[str, Any]:
        """Record one batch; refresh the file unless it was written less than
        ``min_interval`` ago. Returns the ``policy_eval_batch`` event's payload."""
        self.returns.extend(float(r) for r in returns)
        self.batches += 1
        self.last_batch = {"index": self.batches, "episodes": len(returns), **return_stats(returns)}
        now = self._clock()
        if self._last_write is None or now - self._last_write >= self.min_interval:
            self.write("running")
        return {"batch": self.batches, "episodes": len(self.returns),
                "batch_episodes": len(returns),
                "batch_avg_return": self.last_batch["avg_return"],
                "batch_min_return": self.last_batch["min_return"],
                "batch_max_return": self.last_batch["max_return"],
                **return_stats(self.returns)}  # fmt: skip

    def write(self, status: str) -> Path:
        """Replace the file now (the end of the run calls this whatever the throttle says)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.snapshot(status), allow_nan=False))
        os.replace(tmp, self.path)
        self._last_write = self._clock()
        self.writes += 1
        return self.path


def read_eval_summary(run_dir: Path) -> dict[str, Any]:
    """The summary in ``run_dir`` (``ValueError`` when missing or of another schema)."""
    path = Path(run_dir) / FILE_NAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist (no policy_eval ran there yet)") from None
    if not isinstance(data, dict) or data.get("schema") != EVAL_SUMMARY_SCHEMA:
        raise ValueError(f"{path} is not a {EVAL_SUMMARY_SCHEMA} summary")
    return data


__all__ = ["EVAL_SUMMARY_SCHEMA", "FILE_NAME", "EvalSummary", "read_eval_summary", "return_stats"]
