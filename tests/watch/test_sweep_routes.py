"""The sweep pages' JSON (mosaic_sdk.watch.sweeps): sweeps listed, a sweep's trials with their
state, parameters, objective values and pruned step, the best-so-far curve, the Pareto front
of several objectives, and Optuna's parameter importance, from sweeps written through the
sweeps' own store code."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.watch.sweeps import MIN_IMPORTANCE_SETS, pruned_step, trial_number
from tests.watch.storefill import FilledRun
from tests.watch.sweepfill import make_sweep

SPACE = {"lr": {"loguniform": [0.001, 1.0]}, "width": {"grid": [32, 64]}}


def test_no_store_and_no_sweeps_are_notices_not_errors(client: TestClient, store: Path) -> None:
    listing = client.get("/api/sweeps")
    assert listing.status_code == 200
    assert listing.json()["sweeps"] == [] and "no store at" in listing.json()["notice"]
    assert client.get("/api/sweeps/S1").status_code == 404
    FilledRun(store, "RUN-A")  # a store with runs and no sweep
    assert client.get("/api/sweeps").json() == {"store": str(store), "sweeps": []}
    missing = client.get("/api/sweeps/S1")
    assert missing.status_code == 404
    assert "no sweep 'S1'" in missing.json()["error"]
    assert client.get("/api/sweeps/S1/importance").status_code == 404


def test_pages_are_served_and_load_their_charts_locally(client: TestClient) -> None:
    for url, script in (("/sweeps", "sweeps.js"), ("/sweeps/ANY", "sweep.js")):
        page = client.get(url)
        assert page.status_code == 200 and script in page.text, url
    sweep_page = client.get("/sweeps/ANY").text
    assert "/static/vendor/echarts.min.js" in sweep_page
    assert "/static/vendor/uPlot.iife.min.js" in sweep_page
    for asset in ("sweeps.js", "sweep.js", "sweep.css", "vendor/echarts.min.js"):
        assert client.get(f"/static/{asset}").status_code == 200, asset
    assert 'href="/sweeps"' in client.get("/").text  # the runs page links to them


def test_a_sweeps_trials_live_with_states_values_pruned_step_and_best_so_far(
    client: TestClient, store: Path
) -> None:
    make_sweep(
        store,
        "SW-ONE",
        {"space": SPACE, "metric": {"name": "return", "mode": "max"}},
        [
            ("t0000", {"lr": 0.01, "width": 32}, "completed", 5.0, None),
            ("t0001", {"lr": 0.1, "width": 64}, "failed", None, "exit code 1"),
            ("t0001", {"lr": 0.1, "width": 64}, "completed", 3.0, None),  # its second try
            (
                "t0002",
                {"lr": 0.5, "width": 32},
                "pruned",
                1.5,
                "pruned by the median pruner at step 7 (return 1.5)",
            ),
            ("t0003", {"lr": 0.02, "width": 64}, "completed", 9.0, None),
            ("t0004", {"lr": 0.3, "width": 32}, "failed", None, "exit code 2"),
            ("t0005", {"lr": 0.2, "width": 64}, "running", None, None),
        ],
        episodes={"t0000": [(5.0, 10)], "t0003": [(8.0, 9), (10.0, 12)]},
    )
    listed = client.get("/api/sweeps").json()["sweeps"]
    assert [(s["sweep_id"], s["trials"], s["completed"], s["best"]) for s in listed] == [
        ("SW-ONE", 6, 3, 9.0)
    ]
    d = client.get("/api/sweeps/SW-ON").json()  # an id prefix, as sweeps show takes
    assert d["sweep_id"] == "SW-ONE" and d["status"] == "running"
    assert d["objectives"] == [
        {
            "name": "return",
            "mode": "max",
            "label": "return (the mean of the last 10 values, the episodes' values, max)",
        }
    ]
    assert d["params"] == [
        {"name": "lr", "kind": "log", "min": 0.001, "max": 1.0},
        {"name": "width", "kind": "number", "values": [32, 64]},
    ]
    rows = [
        (t["trial_key"], t["attempt"], t["attempts"], t["status"], t["values"], t["pruned_step"])
        for t in d["trials"]
    ]
    assert rows == [
        ("t0000", 1, 1, "completed", [5.0], None),
        ("t0001", 2, 2, "completed", [3.0], None),
        ("t0002", 1, 1, "pruned", [1.5], 7),
        ("t0003", 1, 1, "completed", [9.0], None),
        ("t0004", 1, 1, "failed", [None], None),
        ("t0005", 1, 1, "running", [None], None),
    ]
    by_key = {t["trial_key"]: t for t in d["trials"]}
    assert by_key["t0001"]["params"] == {"lr": 0.1, "width": 64}
    assert by_key["t0003"]["episodes"] == 2 and by_key["t0003"]["run_id"] == "SW-ONE-t0003-4"
    assert by_key["t0004"]["error"] == "exit code 2"
    assert d["counts"] == {"completed": 3, "pruned": 1, "failed": 1, "running": 1}
    assert d["pareto_front"] is None and not any(t["pareto"] for t in d["trials"])
    # the best so far of the completed trials by number: pruned and failed ones are left out
    assert d["best_so_far"] == {
        "number": [0, 1, 3],
        "value": [5.0, 3.0, 9.0],
        "best": [5.0, 5.0, 9.0],
    }


def test_a_minimised_objective_keeps_the_lowest_as_best(client: TestClient, store: Path) -> None:
    make_sweep(
        store,
        "SW-MIN",
        {"space": SPACE, "metric": {"name": "loss", "mode": "min"}},
        [
            (f"t{i:04d}", {"lr": 0.01 * (i + 1), "width": 32}, "completed", v, None)
            for i, v in enumerate([4.0, 6.0, 2.0, 3.0])
        ],
    )
    best = client.get("/api/sweeps/SW-MIN").json()["best_so_far"]
    assert best["best"] == [4.0, 4.0, 2.0, 2.0]


def test_several_objectives_mark_the_pareto_front(client: TestClient, store: Path) -> None:
    # return (max) and steps (min), read from each run's episodes: worked by hand,
    # A (10, 5) and B (6, 2) are on the front, C (6, 6) is beaten by both, D (10, 8) by A.
    points = {"t0000": (10.0, 5), "t0001": (6.0, 2), "t0002": (6.0, 6), "t0003": (10.0, 8)}
    make_sweep(
        store,
        "SW-TWO",
        {
            "space": SPACE,
            "metric": [{"name": "return", "mode": "max"}, {"name": "steps", "mode": "min"}],
        },
        [
            (key, {"lr": 0.1 * (i + 1), "width": 32}, "completed", ret, None)
            for i, (key, (ret, _)) in enumerate(points.items())
        ]
        + [("t0004", {"lr": 0.9, "width": 64}, "running", None, None)],
        episodes={key: [p] for key, p in points.items()} | {"t0004": [(50.0, 1)]},
    )
    d = client.get("/api/sweeps/SW-TWO").json()
    assert [o["name"] for o in d["objectives"]] == ["return", "steps"]
    values = {t["trial_key"]: t["values"] for t in d["trials"]}
    assert values == {
        "t0000": [10.0, 5.0],
        "t0001": [6.0, 2.0],
        "t0002": [6.0, 6.0],
        "t0003": [10.0, 8.0],
        "t0004": [None, None],  # running: not scored yet, not on the front
    }
    assert d["pareto_front"] == ["t0000", "t0001"]
    assert [t["trial_key"] for t in d["trials"] if t["pareto"]] == ["t0000", "t0001"]
    again = client.get("/api/sweeps/SW-TWO").json()  # finished runs' values from the cache
    assert again["trials"] == d["trials"]


def test_importance_needs_enough_finished_sets_then_ranks_the_parameter_that_matters(
    client: TestClient, store: Path
) -> None:
    pytest.importorskip("optuna", reason="parameter importance is Optuna's (the search extra)")
    space = {"x": {"uniform": [0.0, 1.0]}, "noise": {"uniform": [0.0, 1.0]}}
    rnd = random.Random(3)
    draws = [(rnd.random(), rnd.random()) for _ in range(24)]

    def trial(i: int) -> tuple[str, dict[str, Any], str, float | None, str | None]:
        x, noise = draws[i]
        return (f"t{i:04d}", {"x": x, "noise": noise}, "completed", -((x - 0.8) ** 2), None)

    few = MIN_IMPORTANCE_SETS - 1
    make_sweep(store, "SW-FEW", {"space": space}, [trial(i) for i in range(few)])
    early = client.get("/api/sweeps/SW-FEW/importance")
    assert early.status_code == 200
    body = early.json()
    assert body["importances"] is None and body["finished_sets"] == few
    assert body["note"] == (
        f"parameter importance needs {MIN_IMPORTANCE_SETS} finished parameter sets; "
        f"this sweep has {few} so far"
    )
    make_sweep(store, "SW-MANY", {"space": space}, [trial(i) for i in range(24)])
    found = client.get("/api/sweeps/SW-MANY/importance").json()
    assert found["params"] == ["noise", "x"] and found["finished_sets"] == 24
    [imp] = found["importances"]
    assert imp["x"] > imp["noise"] and imp["x"] > 0.5
    assert abs(imp["x"] + imp["noise"] - 1.0) < 1e-9
    assert "PED-ANOVA" in found["evaluator"]


def test_importance_of_a_one_key_space_says_why_there_is_none(
    client: TestClient, store: Path
) -> None:
    pytest.importorskip("optuna", reason="parameter importance is Optuna's (the search extra)")
    make_sweep(
        store,
        "SW-ONEKEY",
        {"space": {"x": {"uniform": [0.0, 1.0]}}},
        [(f"t{i:04d}", {"x": i / 10}, "completed", float(i), None) for i in range(6)],
    )
    body = client.get("/api/sweeps/SW-ONEKEY/importance").json()
    assert body["importances"] is None
    assert "space of two or more keys; this sweep searches 1" in body["note"]


def test_importance_of_a_ray_sweep_says_it_is_the_local_engines(
    client: TestClient, store: Path
) -> None:
    pytest.importorskip("optuna", reason="parameter importance is Optuna's (the search extra)")
    make_sweep(
        store,
        "SW-RAY",
        {"space": SPACE},
        [
            (f"ab12c_{i:05d}", {"lr": 0.1 * (i + 1), "width": 32}, "completed", float(i), None)
            for i in range(5)
        ],
    )
    d = client.get("/api/sweeps/SW-RAY").json()
    assert [t["number"] for t in d["trials"]] == [0, 1, 2, 3, 4]
    assert d["best_so_far"]["best"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    body = client.get("/api/sweeps/SW-RAY/importance").json()
    assert body["importances"] is None and "local-engine sweep" in body["note"]


def test_trial_numbers_and_pruned_steps_are_read_from_what_the_driver_stores() -> None:
    assert trial_number("t0042") == 42 and trial_number("odd") == -1
    assert trial_number("ab12c_00007") == 7  # a Ray Tune trial id
    assert pruned_step("pruned by the asha pruner at step 120 (return 3.5)") == 120
    assert pruned_step("exit code 1") is None and pruned_step(None) is None


def test_a_damaged_trial_row_is_a_400_naming_the_sweep_trial_and_field(
    client: TestClient, store: Path
) -> None:
    pytest.importorskip("optuna", reason="parameter importance is Optuna's (the search extra)")
    space = {"x": {"uniform": [0.0, 1.0]}, "y": {"grid": [1, 2]}}
    trials = [(f"t{i:04d}", {"x": i / 10, "y": 1}, "completed", float(i), None) for i in range(6)]
    make_sweep(store, "SW-BAD", {"space": space}, trials)
    conn = sqlite3.connect(store)
    with conn:  # a value outside the space: the trials read, the study cannot be rebuilt
        conn.execute(
            "UPDATE sweep_trials SET params_json = '{\"x\": 7, \"y\": 1}' WHERE trial_key = 't0002'"
        )
    assert client.get("/api/sweeps/SW-BAD").status_code == 200
    outside = client.get("/api/sweeps/SW-BAD/importance")
    assert outside.status_code == 400
    assert outside.json()["error"] == (
        "sweep SW-BAD, trial t0002 (attempt 1): params_json x = 7 is outside "
        "space.x.uniform [0.0, 1.0] (a damaged row in the store)"
    )
    with conn:
        conn.execute("UPDATE sweep_trials SET metric = 'high' WHERE trial_key = 't0003'")
    conn.close()
    for url in ("/api/sweeps/SW-BAD", "/api/sweeps/SW-BAD/importance"):
        text = client.get(url)
        assert text.status_code == 400, url  # permanent: not the 503 the page retries
        assert text.json()["error"].startswith(
            "sweep SW-BAD, trial t0003 (attempt 1): metric is text"
        )
    assert client.get("/api/sweeps").json()["sweeps"][0]["best"] == 5.0
