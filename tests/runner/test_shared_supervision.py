"""``mosaic run`` and the conformance suite supervise a worker with the same code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mosaic_sdk.conformance.leftovers import processes_of
from mosaic_sdk.conformance.recording import RunPlan, record_run
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle
from mosaic_sdk.runner.supervisor import resolve_worker, run_worker


def test_both_go_through_the_lifecycle_and_judge_an_orphan_alike(
    fixture_workers: Path, store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that exits leaving a child holding its stdout: both read all its lines, reap
    the child through RunLifecycle, and the suite reports the child as left behind."""
    supervised: list[str] = []
    real = RunLifecycle.supervise

    def spy(self: RunLifecycle) -> None:
        supervised.append(self.prepared.run_id)
        real(self)

    monkeypatch.setattr(RunLifecycle, "supervise", spy)
    handle = resolve_worker("fixture")
    config = {"mode": "orphan", "lines": 2}
    result = run_worker(handle, config, run_id="shared-run", store=store_path)
    recorded = record_run(
        handle,
        RunPlan(kind="normal", run_id="shared-rec", config=config),
        runs_dir=tmp_path / "rec",
        logs_dir=tmp_path / "logs",
    )
    assert supervised == ["shared-run", "shared-rec"]
    assert result.exit_code == recorded.exit_code == 0
    assert result.counts["steps"] == len(recorded.of_kind("step")) == 2
    assert recorded.events()[-1] == "run_completed"
    assert recorded.leftover_pids, "the suite must see the child the worker left"
    assert processes_of("shared-run") == processes_of("shared-rec") == []
