"""The observer guide (docs/guides/observers.md): its plugin, installed by pip from the page's
"observer-plugin" and "observer-pyproject" blocks, gets every stored row of a `mosaic run`
through the mosaic.plugins entry-point group; broken entry points of that group are reported
and do not stop anything."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from docs_snippets.blocks import blocks
from guide_install import mosaic, pip_install, site_env

ROOT = Path(__file__).resolve().parents[1]
PAGE = "docs/guides/observers.md"
BROKEN = ROOT / "tests" / "plugin_fixtures" / "broken_plugins"


def _block(name: str) -> str:
    [block] = [b for b in blocks(PAGE) if b.marker == name]
    return block.code


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The guide's package and the broken-plugins fixture, pip-installed into one directory."""
    work = tmp_path_factory.mktemp("observers")
    package = work / "run-forward"
    package.mkdir()
    (package / "run_forward.py").write_text(_block("observer-plugin"))
    (package / "pyproject.toml").write_text(_block("observer-pyproject"))
    target = work / "site"
    pip_install(package, target)
    broken = work / "broken"
    shutil.copytree(BROKEN, broken)  # the build writes into its source tree
    pip_install(broken, target)
    assert list(target.glob("run_forward-0.1.0.dist-info"))
    return target


class Received:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.paths: set[str] = set()
        self.lock = threading.Lock()


@pytest.fixture
def endpoint() -> Iterator[tuple[str, Received]]:
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with received.lock:
                received.paths.add(self.path)
                received.lines += [json.loads(line) for line in body.decode().splitlines()]
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/runs", received
    finally:
        server.shutdown()
        server.server_close()


def test_plugins_list_shows_the_installed_plugin_and_the_broken_ones(site: Path) -> None:
    done = mosaic("plugins", "list", "--json", env=site_env(site))
    assert done.returncode == 0, done.stderr
    entries = {e["name"]: e for e in json.loads(done.stdout)}
    assert entries["forward"]["ok"] is True
    assert entries["forward"]["distribution"] == "run-forward"
    assert entries["forward"]["hooks"] == ["mosaic_telemetry_episodes", "mosaic_telemetry_steps"]
    assert entries["missing"]["ok"] is False
    assert entries["missing"]["error"]["error_type"] == "ModuleNotFoundError"
    assert entries["hookless"]["error"]["error_type"] == "TypeError"
    assert "no @mosaic_sdk.hookimpl" in entries["hookless"]["error"]["message"]
    text = mosaic("plugins", "list", env=site_env(site))
    assert text.returncode == 0
    assert "mosaic_telemetry_episodes, mosaic_telemetry_steps" in text.stdout
    assert "2 plugin(s) failed to load" in text.stdout
    # workers are not plugins of this group, nor the other way round
    workers = json.loads(mosaic("workers", "list", "--json", env=site_env(site)).stdout)
    assert "forward" not in {w["name"] for w in workers}
    # switched off by name, or all entry points at once
    off = mosaic("plugins", "list", env=site_env(site, MOSAIC_DISABLE_PLUGINS="missing,hookless"))
    assert "failed to load" not in off.stdout and "forward" in off.stdout
    none = mosaic(
        "plugins", "list", "--json", env=site_env(site, MOSAIC_DISABLE_PLUGIN_AUTOLOAD="1")
    )
    assert json.loads(none.stdout) == []


def test_the_guide_observer_receives_every_stored_row_of_a_run(
    site: Path, endpoint: tuple[str, Received], tmp_path: Path
) -> None:
    url, received = endpoint
    store = tmp_path / "runs.sqlite"
    env = site_env(site, RUN_FORWARD_URL=url)
    args = ("run", "example", "--set", "episodes=3", "--store", str(store), "--json")
    done = mosaic(*args, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    run_id = result["run_id"]
    # the broken plugins are reported, once each, and the run went on
    assert done.stderr.count("plugin 'missing'") == 1
    assert done.stderr.count("plugin 'hookless'") == 1
    assert "runs go on without it" in done.stderr
    conn = sqlite3.connect(store)
    try:
        steps = conn.execute(
            "SELECT line_no, reward, raw FROM steps WHERE run_id = ? ORDER BY line_no", (run_id,)
        ).fetchall()
        episodes = conn.execute(
            "SELECT line_no, total_reward FROM episodes WHERE run_id = ? ORDER BY line_no",
            (run_id,),
        ).fetchall()
        [(report,)] = conn.execute("SELECT observers_json FROM runs").fetchall()
    finally:
        conn.close()
    assert len(steps) > 0 and len(episodes) == 3
    got_steps = [
        (d["line_no"], d["reward"], d["raw"]) for d in received.lines if d["kind"] == "steps"
    ]
    got_episodes = [
        (d["line_no"], d["total_reward"]) for d in received.lines if d["kind"] == "episodes"
    ]
    assert got_steps == steps
    assert got_episodes == episodes
    assert received.paths == {f"/runs/{run_id}"}
    [forward] = json.loads(report)
    assert forward == {
        "name": "plugin:forward",
        "delivered_steps": len(steps),
        "delivered_episodes": 3,
        "missed_steps": 0,
        "missed_episodes": 0,
        "error": None,
        "delivered_points": 0,  # it observes no series (mosaic_telemetry_series)
        "missed_points": 0,
    }


def test_an_unreachable_endpoint_disables_the_observer_and_the_run_completes(
    site: Path, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    env = site_env(site, RUN_FORWARD_URL="http://127.0.0.1:9/nowhere")  # discard port: refused
    args = ("run", "example", "--set", "episodes=2", "--store", str(store), "--json")
    done = mosaic(*args, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("observer plugin 'plugin:forward' raised URLError") == 1
    result = json.loads(done.stdout)
    [report] = result["observers"]
    assert report["error"].startswith("URLError") and report["delivered_steps"] == 0
    assert report["missed_steps"] == result["counts"]["steps"] > 0
