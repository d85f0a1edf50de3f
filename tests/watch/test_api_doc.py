"""docs/reference/watch-api.md describes every route of the app: a route added to
``mosaic_sdk.watch.app`` without a section on that page fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the watch extra")

from starlette.routing import Mount, Route, WebSocketRoute  # noqa: E402

from mosaic_sdk.watch.app import create_app  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "watch-api.md"


def routes(tmp_path: Path) -> list[tuple[str, str]]:
    """(method, path) of every route of the app; pages and static files as ``PAGE``."""
    app = create_app(tmp_path / "runs.sqlite", token="t")
    while not hasattr(app, "routes"):  # the security middleware wraps the Starlette app
        app = app.app
    found: list[tuple[str, str]] = []
    for route in app.routes:
        if isinstance(route, WebSocketRoute):
            found.append(("WS", route.path))
        elif isinstance(route, Mount):
            found.append(("PAGE", route.path))
        elif isinstance(route, Route):
            methods = sorted((route.methods or {"GET"}) - {"HEAD"})
            kind = "PAGE" if not route.path.startswith("/api/") else methods[0]
            found.append((kind, route.path))
    return found


def test_every_route_is_documented(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `(\w+) (\S+)`$", text, re.M))
    missing = []
    for method, path in routes(tmp_path):
        if method == "PAGE":  # the HTML pages and /static: named in the pages section
            if f"`{path}" not in text and f"`GET {path}`" not in text:
                missing.append(path)
        elif (method, path) not in headings:
            missing.append(f"{method} {path}")
    assert not missing, f"routes without a section in {PAGE.name}: {missing}"


def test_every_documented_route_exists(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    documented = set(re.findall(r"^### `(\w+) (\S+)`$", text, re.M))
    assert documented <= set(routes(tmp_path)), documented - set(routes(tmp_path))


def test_the_documented_errors_are_the_apps(tmp_path: Path) -> None:
    """The error texts the page quotes are what the app answers."""
    from starlette.testclient import TestClient

    client = TestClient(
        create_app(tmp_path / "runs.sqlite", token="t"), base_url="http://127.0.0.1"
    )
    text = PAGE.read_text(encoding="utf-8")
    answer = client.get("/api/runs")
    assert answer.status_code == 200 and answer.json()["runs"] == [] and "notice" in answer.json()
    assert client.get("/api/runs/nope").status_code == 404
    control = client.post("/api/runs/x/control", json={"cmd": "pause"})
    assert control.status_code == 403
    bad = client.post("/api/runs/x/control", json={"cmd": "dance"}, headers={"X-Mosaic-Token": "t"})
    assert bad.status_code == 400 and bad.json()["error"] in " ".join(text.split())
    foreign = client.get("/api/runs", headers={"host": "evil.example"})
    assert foreign.status_code == 421
