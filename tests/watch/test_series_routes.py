"""The series routes of mosaic watch (``/api/runs/{id}/series`` and ``.../series/points``) and
the run's counts named apart, over a store filled through the runner's own ingest."""

from __future__ import annotations

import json
import math
from pathlib import Path

from starlette.testclient import TestClient

from tests.watch.storefill import FilledRun, metrics_line


def points(client: TestClient, run_id: str, wanted: list[dict[str, object]], **params: object):
    return client.get(
        f"/api/runs/{run_id}/series/points", params={"series": json.dumps(wanted), **params}
    )


def test_series_are_listed_by_name_and_agent_and_filtered_by_glob(
    client: TestClient, store: Path
) -> None:
    run = FilledRun(store, "RUN-SERIES")
    run.add_lines(
        [
            metrics_line({"losses/value": 1.0, "losses/policy": -0.5, "charts/sps": 900}, step=0),
            metrics_line({"losses/value": 0.5, "losses/policy": math.nan}, step=128),
            metrics_line({"reward": 1.0}, step=3, agent_id="blue"),
            metrics_line({"reward": 2.0}, step=3, agent_id="red"),
        ]
    )
    got = client.get("/api/runs/RUN-SER/series")  # a unique prefix names the run
    assert got.status_code == 200
    body = got.json()
    assert body["run_id"] == "RUN-SERIES"
    rows = [(s["name"], s["agent_id"], s["points"], s["last_step"]) for s in body["series"]]
    assert rows == [
        ("charts/sps", None, 1, 0),
        ("losses/policy", None, 2, 128),
        ("losses/value", None, 2, 128),
        ("reward", "blue", 1, 3),
        ("reward", "red", 1, 3),
    ]
    policy = body["series"][1]
    assert policy["last_value"] == "NaN"  # JSON has no NaN: named, as Number() reads it
    assert body["counts"] == {"points": 7, "refused": 0, "series": 5}
    glob = client.get("/api/runs/RUN-SERIES/series", params={"glob": "losses/*"}).json()
    assert [s["name"] for s in glob["series"]] == ["losses/policy", "losses/value"]
    assert client.get("/api/runs/RUN-SERIES/series?glob=nothing*").json()["series"] == []


def test_points_come_as_columns_past_each_series_step(client: TestClient, store: Path) -> None:
    run = FilledRun(store, "RUN-P")
    base = 1_800_000_000_000_000_000
    run.add_lines(
        [
            metrics_line({"loss": float(v)}, step=10 * i, ts_ns=base + i * 1_000_000_000)
            for i, v in enumerate([4, 3, 2, 1])
        ]
    )
    run.add_lines([metrics_line({"loss": math.inf}, step=40, ts_ns=base + 4_000_000_000)])
    run.add_lines([metrics_line({"reward": 7.5}, step=1, agent_id="blue")])
    first = points(client, "RUN-P", [{"name": "loss", "agent_id": None}])
    assert first.status_code == 200
    [loss] = first.json()["series"]
    assert loss["steps"] == [0, 10, 20, 30, 40]
    assert loss["values"] == [4.0, 3.0, 2.0, 1.0, "Infinity"]
    assert loss["wall"][:2] == [1_800_000_000.0, 1_800_000_001.0] and loss["more"] is False
    # a live page asks from the last step it has; several series in one request
    later = points(
        client,
        "RUN-P",
        [
            {"name": "loss", "agent_id": None, "after_step": 20},
            {"name": "reward", "agent_id": "blue", "after_step": None},
            {"name": "reward", "agent_id": None},  # no such series (yet): no points
        ],
    ).json()["series"]
    assert [s["steps"] for s in later] == [[30, 40], [1], []]
    assert later[1]["values"] == [7.5]
    # limit: the first points, and `more` says there are others past them
    limited = points(client, "RUN-P", [{"name": "loss", "agent_id": None}], limit=2).json()
    assert limited["series"][0]["steps"] == [0, 10] and limited["series"][0]["more"] is True


def test_base64_columns_are_the_same_points_as_float64(client: TestClient, store: Path) -> None:
    """What the pages ask for: each column as the base64 of little-endian float64 values."""
    import base64

    import numpy as np

    run = FilledRun(store, "RUN-B")
    run.add_lines(
        [
            metrics_line({"loss": v}, step=7 * i, ts_ns=1_800_000_000_000_000_000 + i)
            for i, v in enumerate([0.5, math.nan, -math.inf, 1e300])
        ]
    )
    wanted = [{"name": "loss", "agent_id": None}]
    got = points(client, "RUN-B", wanted, encoding="base64").json()
    assert got["encoding"] == "base64"
    [loss] = got["series"]

    def column(text: str) -> np.ndarray:
        return np.frombuffer(base64.b64decode(text), dtype="<f8")

    assert column(loss["steps"]).tolist() == [0.0, 7.0, 14.0, 21.0]
    values = column(loss["values"])
    assert values[0] == 0.5 and math.isnan(values[1]) and values[2] == -math.inf
    assert values[3] == 1e300
    assert column(loss["wall"])[0] == 1_800_000_000.0
    bad = points(client, "RUN-B", wanted, encoding="xml")
    assert bad.status_code == 400 and "encoding='xml' is not one of json, base64" in bad.text


def test_a_bad_series_query_is_a_400_saying_what_it_takes(client: TestClient, store: Path) -> None:
    FilledRun(store, "RUN-Q")
    for bad in ("", "x", "{}", "[]", '[{"name": 3}]', '[{"name": "a", "after_step": "7"}]'):
        got = client.get("/api/runs/RUN-Q/series/points", params={"series": bad})
        assert got.status_code == 400, bad
        assert got.json()["error"].startswith("series= takes a JSON list"), bad
    too_many = json.dumps([{"name": f"s{i}"} for i in range(201)])
    got = client.get("/api/runs/RUN-Q/series/points", params={"series": too_many})
    assert got.status_code == 400 and "at most 200 series" in got.json()["error"]
    assert client.get("/api/runs/NOPE/series").status_code == 404


def test_the_run_says_what_its_counts_count(client: TestClient, store: Path) -> None:
    run = FilledRun(store, "RUN-C")
    for _ in range(3):
        run.add_step(1.0)
    # step lines throttled: two episodes of 100 env steps each, three step lines
    run.add_episode(10.0, 100)
    run.add_episode(12.0, 100)
    [row] = client.get("/api/runs").json()["runs"]  # the runs page names them apart too
    assert (row["steps"], row["env_steps"], row["episodes"]) == (3, 200, 2)
    counted = client.get("/api/runs/RUN-C").json()["named_counts"]
    assert counted == {
        "env_steps": 200,
        "step_lines": 3,
        "episodes": 2,
        "games": None,
        "agent_episodes": None,
    }


def test_a_multi_agent_run_counts_games_and_agent_episodes_apart(
    client: TestClient, store: Path
) -> None:
    from tests.watch.test_agents_eval import multi_agent_run

    multi_agent_run(store, "RUN-MA")  # 4 games of red against blue, a step line each
    counted = client.get("/api/runs/RUN-MA").json()["named_counts"]
    assert counted == {
        "env_steps": 60,  # red's 4 x 10 and blue's 4 x 5 env steps
        "step_lines": 8,
        "episodes": 8,
        "games": 4,
        "agent_episodes": 8,
    }


def test_points_downsampled_to_a_charts_width_and_whole_inside_a_zoom(
    client: TestClient, store: Path
) -> None:
    run = FilledRun(store, "RUN-THIN")
    values = [math.sin(i / 50) for i in range(3000)]
    values[1500] = 9.0  # a spike the picture keeps
    run.add_lines([metrics_line({"loss": v}, step=i) for i, v in enumerate(values)])
    wanted = [{"name": "loss", "agent_id": None}]
    got = points(client, "RUN-THIN", wanted, buckets=100)
    assert got.status_code == 200
    [row] = got.json()["series"]
    assert row["downsampled"] is True and row["points"] == 3000 and row["through"] == 2999
    assert 100 < len(row["steps"]) <= 200 and 9.0 in row["values"]
    assert all(values[s] == v for s, v in zip(row["steps"], row["values"], strict=True))
    # a zoom: a range small enough comes whole, every point of it
    zoom = [{"name": "loss", "agent_id": None, "after_step": 999, "through_step": 1100}]
    [row] = points(client, "RUN-THIN", zoom, buckets=100).json()["series"]
    assert row["downsampled"] is False and row["steps"] == list(range(1000, 1101))
    assert row["values"] == values[1000:1101] and row["through"] == 1100
    # live: past the step the page has, what came since; without buckets, every point
    run.add_lines([metrics_line({"loss": 0.5}, step=3000)])
    after = [{"name": "loss", "agent_id": None, "after_step": 2999}]
    [row] = points(client, "RUN-THIN", after, buckets=100).json()["series"]
    assert row["steps"] == [3000] and row["through"] == 3000
    [row] = points(client, "RUN-THIN", wanted).json()["series"]
    assert row["downsampled"] is False and len(row["steps"]) == 3001
    bad = points(client, "RUN-THIN", wanted, buckets=-3)
    assert bad.status_code == 400 and "buckets=-3" in bad.json()["error"]
    bad = points(client, "RUN-THIN", [{"name": "loss", "through_step": "x"}])
    assert bad.status_code == 400


def batch(client: TestClient, wanted: list[dict[str, object]], **params: object):
    return client.get("/api/series/batch", params={"series": json.dumps(wanted), **params})


def decode_batch(body: bytes) -> list[dict[str, object]]:
    """The batch answer read as the page reads it: a JSON header, then float64 columns."""
    import struct

    import numpy as np

    (size,) = struct.unpack_from("<I", body)
    header = json.loads(body[4 : 4 + size])
    at = 4 + size + (-(4 + size) % 8)
    out = []
    for row in header["series"]:
        n = row["n"]
        cols = np.frombuffer(body, dtype="<f8", count=3 * n, offset=at)
        out.append({**row, "steps": cols[:n], "values": cols[n : 2 * n], "wall": cols[2 * n :]})
        at += 24 * n
    assert at == len(body)
    return out


def test_a_batch_reads_series_of_several_runs_in_one_binary_answer(
    client: TestClient, store: Path
) -> None:
    """What a chart of several runs' lines reads: one request, the same points as the
    per-run route, in the order asked."""
    one, two = FilledRun(store, "RUN-A1"), FilledRun(store, "RUN-A2")
    values = [math.sin(i / 50) for i in range(3000)]
    values[1500] = 9.0
    one.add_lines([metrics_line({"loss": v, "lr": 0.1}, step=i) for i, v in enumerate(values)])
    two.add_lines(
        [
            metrics_line({"loss": v}, step=7 * i, ts_ns=1_800_000_000_000_000_000 + i)
            for i, v in enumerate([0.5, math.nan, -math.inf])
        ]
    )
    wanted = [
        {"run_id": "RUN-A2", "name": "loss", "agent_id": None},
        {"run_id": "RUN-A1", "name": "loss", "agent_id": None},
        {"run_id": "RUN-A1", "name": "lr", "after_step": 2997},
        {"run_id": "RUN-A1", "name": "nothing"},
    ]
    got = batch(client, wanted, buckets=100)
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/vnd.mosaic.series-batch"
    a2, a1, lr, nothing = decode_batch(got.content)
    assert a2["run_id"] == "RUN-A2" and a2["steps"].tolist() == [0.0, 7.0, 14.0]
    assert a2["values"][0] == 0.5 and math.isnan(a2["values"][1]) and a2["values"][2] == -math.inf
    assert a2["wall"][0] == 1_800_000_000.0 and a2["downsampled"] is False
    assert a1["run_id"] == "RUN-A1" and a1["downsampled"] is True and a1["points"] == 3000
    assert a1["through"] == 2999 and 9.0 in a1["values"].tolist()
    same = points(client, "RUN-A1", [{"name": "loss", "agent_id": None}], buckets=100)
    [row] = same.json()["series"]
    assert a1["steps"].tolist() == row["steps"] and a1["values"].tolist() == row["values"]
    assert lr["steps"].tolist() == [2998.0, 2999.0] and lr["values"].tolist() == [0.1, 0.1]
    assert nothing["n"] == 0 and nothing["name"] == "nothing"
    # without buckets, every point; limit pages them as the per-run route does
    [whole] = decode_batch(batch(client, wanted[1:2]).content)
    assert whole["downsampled"] is False and whole["values"].tolist() == values
    [page] = decode_batch(batch(client, wanted[1:2], limit=1000).content)
    assert page["n"] == 1000 and page["more"] is True and page["through"] == 999
    # problems: JSON saying what was wrong
    missing = batch(client, [{"run_id": "NOPE", "name": "loss"}])
    assert missing.status_code == 404 and "NOPE" in missing.json()["error"]
    bad = batch(client, [{"name": "loss"}])
    assert bad.status_code == 400 and "has no run_id" in bad.json()["error"]
    bad = batch(client, wanted, buckets=-3)
    assert bad.status_code == 400 and "buckets=-3" in bad.json()["error"]
