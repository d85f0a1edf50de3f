"""A worker written to the platform's guide (upstream style) is discovered, runs under
`mosaic run`, and every line it prints is stored: its step lines (``event_type``) as steps,
its lifecycle lines (``event``) as events, its stray print as a log line."""

from __future__ import annotations

import pytest

from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.runner import run_worker

pytestmark = pytest.mark.usefixtures("plugin_fixtures")


def test_guide_worker_runs_end_to_end(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("MOSAIC_PLUGINS", "guide=guide_worker:get_worker_metadata")
    handle = discover_workers().get("guide")
    assert handle.style == "upstream" and handle.metadata.name == "Guide Worker"
    # the guide's config keys are not the SDK's: kept as extras and written back flat
    result = run_worker(
        "guide",
        {"algorithm": "dqn", "total_steps": 7},
        run_id="guide-1",
        store=tmp_path / "runs.sqlite",
    )
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 7
    assert result.counts["events"] == 2
    assert result.counts["log_lines"] >= 1  # the stray print, kept
