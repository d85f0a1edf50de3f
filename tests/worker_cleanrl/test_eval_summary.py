"""eval_summary.json: batches, the once-a-second refresh, atomic replacement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mosaic_worker_cleanrl.eval_summary import (
    EVAL_SUMMARY_SCHEMA,
    EvalSummary,
    read_eval_summary,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _summary(tmp_path: Path, clock: Clock) -> EvalSummary:
    return EvalSummary(tmp_path, run_id="r1", env_id="CartPole-v1", policy_path="/p.pt",
                       batch_size=2, episodes_planned=6, clock=clock)  # fmt: skip


def test_batches_accumulate_and_the_file_refreshes_at_most_once_a_second(tmp_path: Path) -> None:
    clock = Clock()
    summary = _summary(tmp_path, clock)
    event = summary.add_batch([1.0, 3.0])
    assert event == {"batch": 1, "episodes": 2, "batch_episodes": 2, "batch_avg_return": 2.0,
                     "batch_min_return": 1.0, "batch_max_return": 3.0,
                     "avg_return": 2.0, "min_return": 1.0, "max_return": 3.0}  # fmt: skip
    first = read_eval_summary(tmp_path)
    assert first["schema"] == EVAL_SUMMARY_SCHEMA and first["status"] == "running"
    assert (first["batch_count"], first["episodes"], first["episodes_planned"]) == (1, 2, 6)
    clock.now += 0.5  # within the second: the batch is counted, the file stays as it was
    summary.add_batch([5.0, 7.0])
    assert read_eval_summary(tmp_path)["batch_count"] == 1 and summary.writes == 1
    clock.now += 0.6  # past it: the next batch refreshes the file with everything so far
    summary.add_batch([-1.0, 0.0])
    data = read_eval_summary(tmp_path)
    assert (data["batch_count"], data["episodes"]) == (3, 6)
    assert (data["avg_return"], data["min_return"], data["max_return"]) == (2.5, -1.0, 7.0)
    assert data["last_batch"] == {"index": 3, "episodes": 2, "avg_return": -0.5,
                                  "min_return": -1.0, "max_return": 0.0}  # fmt: skip
    summary.write("completed")  # the end of the run writes whatever the throttle says
    assert read_eval_summary(tmp_path)["status"] == "completed" and summary.writes == 3
    assert [p.name for p in tmp_path.iterdir()] == ["eval_summary.json"]  # no temporary left


def test_before_any_batch_the_returns_are_null(tmp_path: Path) -> None:
    _summary(tmp_path, Clock()).write("failed")
    data = json.loads((tmp_path / "eval_summary.json").read_text())
    assert data["episodes"] == 0 and data["avg_return"] is None and data["last_batch"] is None


def test_reading_a_missing_or_foreign_summary_says_so(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        read_eval_summary(tmp_path)
    (tmp_path / "eval_summary.json").write_text('{"schema": "other/1"}')
    with pytest.raises(ValueError, match="not a mosaic.cleanrl.eval_summary/1"):
        read_eval_summary(tmp_path)
