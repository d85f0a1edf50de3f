"""Observer plugins see Ray trials: every trial of a Ray sweep is an ordinary run, recorded by
the same :class:`~mosaic_sdk.runner.recorder.RunRecorder` as ``mosaic run``, so the plugins'
``mosaic_telemetry_steps`` / ``mosaic_telemetry_episodes`` / ``mosaic_telemetry_event`` hear of
it (in the driver's process) as they hear of a local run.

Marked ``ray``; against a real local Ray instance (loopback only); skipped without Ray Tune.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from mosaic_sdk.runner.observers import EpisodeRow, StepRow
from mosaic_sdk.runner.store import RunStore
from test_ray import ray_env, ray_tmp  # noqa: F401 - fixtures

from mosaic_sdk import hookimpl
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.sweeps.driver import run_sweep

pytest.importorskip("ray.tune", reason="the ray extra is not installed")

pytestmark = pytest.mark.ray


class Seen:
    """An observer plugin: keeps every row and event it is given, per run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: dict[str, list[StepRow]] = {}
        self.episodes: dict[str, list[EpisodeRow]] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.workers: set[str] = set()

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list[StepRow]) -> None:
        with self.lock:
            self.steps.setdefault(run_id, []).extend(steps)

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list[EpisodeRow]) -> None:
        with self.lock:
            self.episodes.setdefault(run_id, []).extend(episodes)

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.setdefault(run_id, []).append(event)
            self.workers.add(worker)


def _stored(store: Path, table: str, run_id: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store)
    try:
        sql = f"SELECT * FROM {table} WHERE run_id = ? ORDER BY line_no"
        return conn.execute(sql, (run_id,)).fetchall()
    finally:
        conn.close()


def test_observer_plugins_get_every_row_and_event_of_every_ray_trial(
    tmp_path: Path,
    ray_env: None,  # noqa: F811
    ray_tmp: str,  # noqa: F811
    shm_unchanged: None,
) -> None:
    registry = discover_workers()
    seen = Seen()
    registry.pm.register(seen, name="seen")
    store = tmp_path / "s.sqlite"
    result = run_sweep(
        registry.get("example"),
        {
            "base": {
                "episodes": 4,
                "max_steps_per_episode": 15,
                "step_delay_ms": 1,
                "include_observations": False,
            },
            "space": {"env_id": {"grid": ["CartPole-v1", "NoSuchEnv-v0"]}},
            "seeds": [1, 2],
            "trials_at_once": 1,
            "metric": {"name": "return", "last": 2},
        },
        engine="ray",
        store=store,
        report=lambda _m: None,
        ray_options={"num_cpus": 1, "ray_temp_dir": ray_tmp},
    )
    assert result.status == "completed"
    assert len(result.trials) == 4
    statuses = sorted(t["run_status"] for t in result.trials)
    assert statuses == ["completed", "completed", "failed", "failed"]  # NoSuchEnv crashes
    assert seen.workers == {"example"}
    for trial in result.trials:
        run_id = trial["run_id"]
        steps = _stored(store, "steps", run_id)
        episodes = _stored(store, "episodes", run_id)
        if trial["run_status"] == "completed":
            assert len(steps) > 0 and len(episodes) == 4
        # every stored step and episode row, in stored order, as for a local run
        assert [tuple(r) for r in seen.steps.get(run_id, [])] == steps
        assert [tuple(r) for r in seen.episodes.get(run_id, [])] == episodes
        # every event, the one the runner synthesised for the crash included, in order
        with RunStore(store, readonly=True) as runs:
            stored_events = [e["event"] for e in runs.events(run_id)]
            run = runs.get_run(run_id)
        assert stored_events, run_id
        assert [e["event"] for e in seen.events.get(run_id, [])] == stored_events
        # and the observer's report is stored with the run, as for mosaic run
        assert run["observers"] == [
            {
                "name": "seen",
                "delivered_steps": len(steps),
                "delivered_episodes": len(episodes),
                "missed_steps": 0,
                "missed_episodes": 0,
                "error": None,
            }
        ]
    assert set(seen.events) == {t["run_id"] for t in result.trials}
