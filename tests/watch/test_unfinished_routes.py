"""mosaic watch by the rules of unfinished episodes and trials: a run's curve leaves the
episode the run's end cut off out (``skipped`` says so) unless ``?include_unfinished=1``; a
sweep's best comes from its completed trials unless ``?include_unfinished=1``."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.unfinished_runs import FINISHED_RETURNS, PARTIAL_RETURN, store_cut_run
from tests.watch.sweepfill import make_sweep


def test_a_runs_curve_and_summary_leave_the_cut_episode_out(
    client: TestClient, store: Path
) -> None:
    store_cut_run(store)
    curve = client.get("/api/runs/CUT/curve").json()
    assert [y for _, y in curve["raw"]] == FINISHED_RETURNS
    assert curve["skipped"] == {"unfinished": 1}
    assert "unfinished" in curve["skipped_text"]
    asked = client.get("/api/runs/CUT/curve?include_unfinished=1").json()
    assert asked["raw"][-1] == [9.0, PARTIAL_RETURN] and asked["skipped"] == {}
    run = client.get("/api/runs/CUT").json()
    assert run["counts"]["episodes"] == 2 and run["counts"]["unfinished_episodes"] == 1
    listed = client.get("/api/runs").json()["runs"]
    assert [(r["episodes"], r["last_return"]) for r in listed] == [(2, FINISHED_RETURNS[-1])]


def test_a_sweeps_best_is_a_completed_trials(client: TestClient, store: Path) -> None:
    space = {"lr": {"loguniform": [0.001, 1.0]}}
    make_sweep(
        store,
        "SW",
        {"space": space, "metric": {"name": "return", "mode": "max"}},
        [
            ("t0000", {"lr": 0.01}, "completed", 5.0, None),
            ("t0001", {"lr": 0.1}, "stopped", 9.0, None),  # the scheduler cut it short
            ("t0002", {"lr": 0.2}, "pruned", 11.0, "pruned by the median pruner at step 3"),
            ("t0003", {"lr": 0.3}, "completed", 7.0, None),
        ],
    )
    assert client.get("/api/sweeps").json()["sweeps"][0]["best"] == 7.0
    assert client.get("/api/sweeps?include_unfinished=1").json()["sweeps"][0]["best"] == 11.0
    best = client.get("/api/sweeps/SW").json()["best_so_far"]
    assert best == {"number": [0, 1, 3], "value": [5.0, 9.0, 7.0], "best": [5.0, 5.0, 7.0]}
    asked = client.get("/api/sweeps/SW?include_unfinished=1").json()["best_so_far"]
    assert asked["best"] == [5.0, 9.0, 9.0]
