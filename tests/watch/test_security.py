"""mosaic watch's access rules: loopback Host only, the token beyond loopback and for control,
no file outside the app's assets, and a Content-Security-Policy on every answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from mosaic_sdk.watch.app import create_app
from mosaic_sdk.watch.routes import STATIC
from mosaic_sdk.watch.security import is_loopback
from tests.watch.conftest import LOOPBACK_HOST, TOKEN
from tests.watch.storefill import FilledRun


@pytest.mark.parametrize(
    "path",
    [
        "/static/../app.py",
        "/static/%2e%2e/app.py",
        "/static/..%2fapp.py",
        "/static/%2e%2e%2f%2e%2e%2fcli%2fwatch.py",
        "/static//etc/passwd",
        "/static/../../../../../../etc/passwd",
        "/static/%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "/../../etc/passwd",
        "/runs/../../etc/passwd",
        "/static/",
    ],
)
def test_no_route_serves_a_file_outside_the_assets(client: TestClient, path: str) -> None:
    got = client.get(path)
    assert got.status_code in (400, 404, 405), (path, got.status_code)
    assert "import" not in got.text and "root:" not in got.text


def test_every_asset_served_is_one_of_the_static_files(client: TestClient) -> None:
    names = sorted(p.name for p in STATIC.iterdir() if p.is_file())
    assert {"runs.html", "run.html", "compare.html", "charts.js"} <= set(names)
    for name in names:
        assert client.get(f"/static/{name}").content == (STATIC / name).read_bytes()
    # uPlot and its licence, fetched by the build (mosaic_sdk/watch/vendor.py)
    for name in ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE"):
        got = client.get(f"/static/vendor/{name}")
        assert got.status_code == 200 and got.content == (STATIC / "vendor" / name).read_bytes()


def test_loopback_refuses_other_host_names(store: Path) -> None:
    app = create_app(store, token=TOKEN)
    with TestClient(app, base_url="http://evil.example:8766") as c:
        got = c.get("/api/runs")
        assert got.status_code == 421 and "loopback" in got.text
    for base in ("http://localhost:8766", "http://127.0.0.1:1", "http://[::1]:8766"):
        with TestClient(app, base_url=base) as c:
            assert c.get("/api/runs").status_code == 200, base


def test_beyond_loopback_every_request_needs_the_token(store: Path) -> None:
    app = create_app(store, token=TOKEN, loopback=False)
    with TestClient(app, base_url="http://10.1.2.3:8766") as c:
        refused = c.get("/")
        assert refused.status_code == 403 and "?token=" in refused.text
        assert c.get("/api/runs").status_code == 403
        assert c.get("/static/run.js").status_code == 403
        assert c.get("/?token=wrong-token-wrong-token").status_code == 403
        page = c.get(f"/?token={TOKEN}")
        assert page.status_code == 200
        assert (
            "HttpOnly" in page.headers["set-cookie"]
            and "SameSite=Strict" in page.headers["set-cookie"]
        )
        assert c.get("/api/runs").status_code == 200  # the cookie carries it from now on
    with TestClient(app, base_url="http://10.1.2.3:8766") as c:
        assert c.get("/api/runs", headers={"X-Mosaic-Token": TOKEN}).status_code == 200
        with pytest.raises(WebSocketDisconnect):
            with c.websocket_connect("/ws/runs/R1/frames") as ws:
                ws.receive_text()


def test_a_websocket_from_another_origin_is_refused(client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect(
            "/ws/runs/R1/frames", headers={**LOOPBACK_HOST, "origin": "http://evil.example"}
        ) as ws:
            ws.receive_text()
    with client.websocket_connect(  # the app's own origin is welcome
        "/ws/runs/R1/frames", headers={**LOOPBACK_HOST, "origin": "http://127.0.0.1:8766"}
    ) as ws:
        assert "no FastLane segment" in ws.receive_text()


def test_control_always_needs_the_token_header(client: TestClient, store: Path) -> None:
    FilledRun(store, "RUN-1")
    for headers in ({}, {"X-Mosaic-Token": "nope"}, {"Cookie": f"mosaic_watch_token={TOKEN}"}):
        got = client.post("/api/runs/RUN-1/control", json={"cmd": "pause"}, headers=headers)
        assert got.status_code == 403 and "token" in got.json()["error"], headers


def test_is_loopback() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "example.org", ""]))


def test_worker_text_comes_back_as_data_never_markup(client: TestClient, store: Path) -> None:
    """The API returns what the worker wrote as JSON strings; the pages set them with
    textContent only (tests/watch/test_browser.py checks the page shows them as text)."""
    run = FilledRun(store, "RUN-1")
    run.add_log("<script>window.pwned=1</script>")
    logs = client.get("/api/runs/RUN-1/logs")
    assert logs.headers["content-type"] == "application/json"
    assert logs.json()["logs"][0]["text"] == "<script>window.pwned=1</script>"
    for name in ("common.js", "runs.js", "run.js", "compare.js", "charts.js"):
        source = (STATIC / name).read_text()
        assert "innerHTML" not in source and "insertAdjacentHTML" not in source, name
        assert "document.write" not in source and "eval(" not in source, name
