"""The series routes of mosaic watch answer within a bound (issue 45: 200 series of 100k points
asked without buckets gave a 480 MB body): at most ``MAX_ANSWER_POINTS`` points an answer, the
series asked sharing it, and ``buckets`` that could give more refused with the reason."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

from starlette.testclient import TestClient

from mosaic_sdk.watch.data import MAX_ANSWER_POINTS, MAX_SERIES_PER_REQUEST
from tests.watch.storefill import FilledRun, metrics_line
from tests.watch.test_series_routes import batch, decode_batch, points

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "watch-api.md"
#: One series longer than its share of an answer of MAX_SERIES_PER_REQUEST series.
LONG = MAX_ANSWER_POINTS // MAX_SERIES_PER_REQUEST + 1000


def _long_run(store: Path) -> None:
    FilledRun(store, "RUN-BIG").add_lines(
        [metrics_line({"loss": float(i)}, step=i) for i in range(LONG)]
    )


def test_a_batch_of_many_long_series_holds_at_most_the_answers_points(
    client: TestClient, store: Path
) -> None:
    _long_run(store)
    wanted = [{"run_id": "RUN-BIG", "name": "loss"}] * MAX_SERIES_PER_REQUEST
    got = batch(client, wanted)  # without buckets: every point, 200 times over before
    assert got.status_code == 200
    rows = decode_batch(got.content)
    share = MAX_ANSWER_POINTS // MAX_SERIES_PER_REQUEST
    assert sum(int(r["n"]) for r in rows) <= MAX_ANSWER_POINTS
    assert len(got.content) < 24 * MAX_ANSWER_POINTS + 100_000
    header = json.loads(got.content[4 : 4 + int.from_bytes(got.content[:4], "little")])
    assert header["limit"] == share
    first = rows[0]
    assert first["n"] == share and first["more"] is True and first["through"] == share - 1
    assert first["steps"].tolist() == [float(s) for s in range(share)]
    # the page asks again past `through`, as for any `limit`: every point comes, page by page
    after, steps = first["through"], first["steps"].tolist()
    while True:
        [row] = decode_batch(batch(client, [{**wanted[0], "after_step": after}]).content)
        steps += row["steps"].tolist()
        if not row["more"]:
            break
        after = row["through"]
    assert steps == [float(s) for s in range(LONG)]


def test_the_points_route_shares_the_bound(client: TestClient, store: Path) -> None:
    _long_run(store)
    wanted = [{"name": "loss", "agent_id": None}] * MAX_SERIES_PER_REQUEST
    got = points(client, "RUN-BIG", wanted, encoding="base64")
    assert got.status_code == 200
    body = got.json()
    share = MAX_ANSWER_POINTS // MAX_SERIES_PER_REQUEST
    assert body["limit"] == share
    sizes = [len(base64.b64decode(s["steps"])) // 8 for s in body["series"]]
    assert sizes == [share] * MAX_SERIES_PER_REQUEST and all(s["more"] for s in body["series"])
    # one series alone: its limit, as before
    [one] = points(client, "RUN-BIG", wanted[:1]).json()["series"]
    assert len(one["steps"]) == LONG and one["more"] is False


def test_buckets_that_could_pass_the_bound_are_a_400_saying_what_to_ask(
    client: TestClient, store: Path
) -> None:
    _long_run(store)
    wanted = [{"run_id": "RUN-BIG", "name": "loss"}] * MAX_SERIES_PER_REQUEST
    refused = batch(client, wanted, buckets=8192)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error == (
        "buckets=8192 for 200 series may give 3,276,800 points, more than the 1,000,000 one "
        "answer holds: ask at most 2500 buckets for 200 series, or fewer series a request"
    )
    assert error in " ".join(DOC.read_text(encoding="utf-8").split())  # as the doc quotes it
    per_run = [{"name": "loss", "agent_id": None}] * MAX_SERIES_PER_REQUEST
    assert points(client, "RUN-BIG", per_run, buckets=8192).json()["error"] == error
    got = batch(client, wanted, buckets=2500)  # the most it names: answered
    assert got.status_code == 200
    rows = decode_batch(got.content)
    assert all(r["downsampled"] for r in rows)
    assert sum(int(r["n"]) for r in rows) <= MAX_ANSWER_POINTS
    # what the pages ask (40 series at most, 4096 buckets at most) stays within it
    assert batch(client, wanted[:40], buckets=4096).status_code == 200


def test_steps_a_float64_column_would_round_are_refused_in_float64_answers(
    client: TestClient, store: Path
) -> None:
    """The store refuses steps past 2**53 (the emitter's rule); a store written before holds
    them: the float64 answers say so instead of rounding, JSON numbers give them exactly."""
    FilledRun(store, "RUN-OLD").add_lines([metrics_line({"loss": 0.5}, step=5)])
    big = 2**60 + 1  # a float64 reads 2**60
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE series_points SET step = ?", (big,))
        conn.execute("UPDATE series SET first_step = ?, last_step = ?", (big, big))
        conn.execute("UPDATE series SET summarised = 0")
    refused = batch(client, [{"run_id": "RUN-OLD", "name": "loss"}])
    assert refused.status_code == 400
    assert refused.json()["error"] == (
        f"series 'loss' of run RUN-OLD has steps past 2**53 (from {big} to {big}), which "
        "float64 columns do not hold exactly: read it with encoding=json from "
        "/api/runs/RUN/series/points, or export it (mosaic runs export RUN --what metrics)"
    )
    wanted = [{"name": "loss", "agent_id": None}]
    assert points(client, "RUN-OLD", wanted, encoding="base64").status_code == 400
    [row] = points(client, "RUN-OLD", wanted).json()["series"]
    assert row["steps"] == [big]
