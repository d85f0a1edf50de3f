"""Observer plugins see Ray trials: every trial of a Ray sweep is an ordinary run, recorded by
the same :class:`~mosaic_sdk.runner.recorder.RunRecorder` as ``mosaic run``, so the plugins'
``mosaic_telemetry_steps`` / ``mosaic_telemetry_episodes`` / ``mosaic_telemetry_event`` hear of
it (in the driver's process) as they hear of a local run.

Marked ``ray``; against a real local Ray instance (loopback only); skipped without Ray Tune.
(``ray`` tests are ``heavy``.) The 16-trial sweep checks issue 23's "a 16-trial Ray sweep
stores every line with observers attached".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mosaic_sdk.runner.store import RunStore
from test_ray import ray_env, ray_tmp  # noqa: F401 - fixtures

from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.sweeps.driver import run_sweep
from tests.sweeps.conftest import Seen, stored_rows

pytest.importorskip("ray.tune", reason="the ray extra is not installed")

pytestmark = pytest.mark.ray


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
        steps = stored_rows(store, "steps", run_id)
        episodes = stored_rows(store, "episodes", run_id)
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
                "delivered_points": 0,
                "missed_points": 0,
            }
        ]
    assert set(seen.events) == {t["run_id"] for t in result.trials}


#: Step lines of each of the 16 trials: all different, so a row in the wrong run shows.
SIXTEEN = [200 + 37 * i for i in range(16)]


def test_a_16_trial_ray_sweep_stores_every_line_and_observers_get_every_row(
    tmp_path: Path,
    fixture_worker: str,
    ray_env: None,  # noqa: F811
    ray_tmp: str,  # noqa: F811
    shm_unchanged: None,
) -> None:
    """16 trials of the fixture worker (``lines`` step lines, an episode line and two
    lifecycle lines each: a known count sent), two at a time on a local Ray instance, with an
    observer plugin attached: every line sent is stored, in its own run, and the observer is
    given every stored step and episode row and every event."""
    registry = discover_workers()
    seen = Seen()
    registry.pm.register(seen, name="seen")
    store = tmp_path / "s.sqlite"
    result = run_sweep(
        registry.get(fixture_worker),
        {"space": {"lines": {"grid": SIXTEEN}}, "trials_at_once": 2},
        engine="ray",
        store=store,
        report=lambda _m: None,
        ray_options={"num_cpus": 2, "ray_temp_dir": ray_tmp},
    )
    assert result.status == "completed"
    assert sorted(t["params"]["lines"] for t in result.trials) == SIXTEEN
    sent = stored = 0
    with RunStore(store, readonly=True) as runs:
        for trial in result.trials:
            run_id, lines = trial["run_id"], trial["params"]["lines"]
            run = runs.get_run(run_id)
            assert run["status"] == "completed", run["error"]
            expected = lines + 3  # run_started, the steps, the episode, run_completed
            assert run["counts"]["lines"] == expected
            assert runs.count_rows(run_id) == {
                "steps": lines,
                "episodes": 1,
                "events": 2,
                "log_lines": 0,
            }
            steps = stored_rows(store, "steps", run_id)
            episodes = stored_rows(store, "episodes", run_id)
            assert [tuple(r) for r in seen.steps[run_id]] == steps
            assert [tuple(r) for r in seen.episodes[run_id]] == episodes
            assert seen.named[run_id] == ["fixture:run_started", "fixture:run_completed"]
            [report] = run["observers"]
            assert (report["delivered_steps"], report["delivered_episodes"]) == (lines, 1)
            assert report["missed_steps"] == report["missed_episodes"] == 0
            sent += expected
            stored += run["counts"]["lines"]
    assert len(seen.steps) == 16 and stored == sent == sum(SIXTEEN) + 3 * 16
