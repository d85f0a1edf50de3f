"""Every route of mosaic watch answers from the store, read-only, and never with a 500."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.watch.storefill import FilledRun


def test_pages_are_the_apps_own_static_files(client: TestClient, store: Path) -> None:
    for url, marker in (
        ("/", "runs.js"),
        ("/runs/ANY", "run.js"),
        ("/compare?run=a", "compare.js"),
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        assert page.headers["content-type"].startswith("text/html")
        assert marker in page.text
        assert "script-src" not in page.text  # no inline policy overrides
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
    for asset in ("common.js", "charts.js", "runs.js", "run.js", "compare.js", "watch.css"):
        got = client.get(f"/static/{asset}")
        assert got.status_code == 200 and len(got.content) > 100, asset
    for name in ("runs.html", "run.html", "compare.html"):  # every asset is local: no CDN
        text = client.get(f"/static/{name}").text
        assert (
            "http://" not in text
            and "https://" not in text
            and "//" not in text.replace("<!DOCTYPE", "").split("<body>")[0].replace("/static/", "")
        )


def test_missing_store_is_a_notice_not_an_error(client: TestClient, store: Path) -> None:
    listing = client.get("/api/runs")
    assert listing.status_code == 200
    body = listing.json()
    assert body["runs"] == [] and "no store at" in body["notice"] and str(store) in body["notice"]
    for url in ("/api/runs/R1", "/api/runs/R1/events", "/api/runs/R1/logs", "/api/runs/R1/curve"):
        got = client.get(url)
        assert got.status_code == 404 and "no store at" in got.json()["error"], url
    assert not store.exists()  # reading never creates the store


def test_runs_list_filters_and_rows(client: TestClient, store: Path) -> None:
    a = FilledRun(store, "RUN-A", worker="example", config={"env_id": "CartPole-v1"})
    a.add_episode(10.0, 10)
    a.finish("completed")
    FilledRun(store, "RUN-B", worker="cleanrl", config={"env_id": "Acrobot-v1"})
    b = client.get("/api/runs").json()
    assert [r["run_id"] for r in b["runs"]] == ["RUN-B", "RUN-A"]
    assert b["workers"] == ["cleanrl", "example"]
    row = next(r for r in b["runs"] if r["run_id"] == "RUN-A")
    assert row["status"] == "completed" and row["env_id"] == "CartPole-v1"
    assert (row["steps"], row["episodes"], row["last_return"]) == (0, 1, 10.0)
    assert [r["run_id"] for r in client.get("/api/runs?status=completed").json()["runs"]] == [
        "RUN-A"
    ]
    assert [r["run_id"] for r in client.get("/api/runs?worker=cleanrl").json()["runs"]] == ["RUN-B"]
    assert client.get("/api/runs?worker=nobody").json()["runs"] == []


def test_run_detail_events_and_logs_follow_cursors(client: TestClient, store: Path) -> None:
    run = FilledRun(store, "RUN-1", config={"env_id": "CartPole-v1", "seed": 3})
    run.add_event("run_started", {"seed": 3})
    run.add_log("hello")
    run.add_log("oops", stream="stderr")
    detail = client.get("/api/runs/RUN").json()  # a unique prefix is enough
    assert detail["run_id"] == "RUN-1" and detail["status"] == "running"
    assert detail["config"] == {"env_id": "CartPole-v1", "seed": 3}
    assert detail["counts"]["events"] == 1 and detail["counts"]["log_lines"] == 2
    assert detail["control"] is False  # no run directory, no control socket
    events = client.get("/api/runs/RUN-1/events").json()["events"]
    assert [(e["line_no"], e["event"]) for e in events] == [(1, "run_started")]
    run.add_event("heartbeat")
    newer = client.get("/api/runs/RUN-1/events?after=1").json()["events"]
    assert [(e["line_no"], e["event"]) for e in newer] == [(4, "heartbeat")]
    logs = client.get("/api/runs/RUN-1/logs").json()["logs"]
    assert sorted((x["stream"], x["text"]) for x in logs) == [
        ("stderr", "oops"),
        ("stdout", "hello"),
    ]
    run.add_log("again")
    more = client.get("/api/runs/RUN-1/logs?after_stdout=2&after_stderr=3").json()["logs"]
    assert [(x["line_no"], x["text"]) for x in more] == [(5, "again")]


def test_unknown_run_and_bad_query_are_clear(client: TestClient, store: Path) -> None:
    FilledRun(store, "RUN-1")
    got = client.get("/api/runs/NOPE")
    assert got.status_code == 404 and "no run 'NOPE'" in got.json()["error"]
    bad = client.get("/api/runs/RUN-1/events?after=abc")
    assert bad.status_code == 400 and "after='abc'" in bad.json()["error"]


def test_a_store_that_is_not_a_store_is_a_503_message(client: TestClient, store: Path) -> None:
    store.write_text("not a database at all, just text " * 100)
    got = client.get("/api/runs")
    assert got.status_code == 503 and "store" in got.json()["error"]


def test_curve_is_built_from_episodes_downsampled_and_incremental(
    client: TestClient, store: Path
) -> None:
    run = FilledRun(store, "RUN-1")
    for i in range(30):
        run.add_episode(float(i), 10)
    curve = client.get("/api/runs/RUN-1/curve?smooth=5").json()
    assert curve["episodes"] == 30 and curve["smooth"] == 5
    assert curve["raw"][0] == [10.0, 0.0] and curve["raw"][-1] == [300.0, 29.0]
    assert curve["smoothed"][-1] == [300.0, sum(range(25, 30)) / 5]
    assert client.get("/api/runs/RUN-1/curve?known=30").json() == {
        "run_id": "RUN-1",
        "episodes": 30,
        "read": 30,
        "unchanged": True,
    }
    run.add_episode(100.0, 5)
    grown = client.get("/api/runs/RUN-1/curve?known=30").json()
    assert grown["episodes"] == 31 and grown["raw"][-1] == [305.0, 100.0]
    small = client.get("/api/runs/RUN-1/curve?points=10").json()
    assert len(small["raw"]) <= 10 and [305.0, 100.0] in small["raw"]  # the peak is kept


def test_reading_writes_nothing_to_the_store(client: TestClient, store: Path) -> None:
    run = FilledRun(store, "RUN-1")
    run.add_episode(1.0, 1)
    run.add_event("heartbeat")
    wal = Path(str(store) + "-wal")

    def contents() -> tuple[bytes, bytes]:
        return store.read_bytes(), wal.read_bytes() if wal.exists() else b""

    before = contents()
    for url in ("/api/runs", "/api/runs/RUN-1", "/api/runs/RUN-1/events", "/api/runs/RUN-1/logs"):
        assert client.get(url).status_code == 200, url
    assert client.get("/api/runs/RUN-1/curve").json()["episodes"] == 1
    assert contents() == before


def test_a_new_store_with_the_same_run_id_gets_a_new_curve(client: TestClient, store: Path) -> None:
    import time

    run = FilledRun(store, "r42")
    for _ in range(5):
        run.add_episode(100.0, 10)
    assert client.get("/api/runs/r42/curve").json()["episodes"] == 5
    for suffix in ("", "-wal", "-shm"):  # the user starts over with the same --run-id
        Path(str(store) + suffix).unlink(missing_ok=True)
    time.sleep(0.01)
    again = FilledRun(store, "r42")
    again.add_episode(1.0, 3)
    curve = client.get("/api/runs/r42/curve").json()
    assert curve["episodes"] == 1 and curve["raw"] == [[3.0, 1.0]]


def test_a_cursor_past_sqlites_integers_is_a_400_not_a_500(client: TestClient, store: Path) -> None:
    FilledRun(store, "RUN-1")
    for url in (
        "/api/runs/RUN-1/events?after=99999999999999999999999",
        "/api/runs/RUN-1/events?after=-99999999999999999999999",
        "/api/runs/RUN-1/logs?after_stdout=99999999999999999999999",
    ):
        got = client.get(url)
        assert got.status_code == 400, (url, got.text)
        assert "out of range" in got.json()["error"], url
    assert client.get(f"/api/runs/RUN-1/events?after={2**63 - 1}").status_code == 200


def test_a_control_body_nested_too_deep_is_a_400_not_a_500(client: TestClient, store: Path) -> None:
    from tests.watch.conftest import TOKEN

    FilledRun(store, "RUN-1")
    deep = "[" * 100_000 + "]" * 100_000
    got = client.post(
        "/api/runs/RUN-1/control",
        content=deep,
        headers={"X-Mosaic-Token": TOKEN, "content-type": "application/json"},
    )
    assert got.status_code == 400 and 'send {"cmd": ...}' in got.json()["error"]
