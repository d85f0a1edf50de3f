"""``mosaic watch`` on the command line: it prints its URL with the token, serves, refuses bad
arguments with one line, and says which extra to install when the web stack is missing."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.watch.conftest import TOKEN
from tests.watch.processes import start_watch, stop
from tests.watch.storefill import FilledRun


def mosaic(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_it_serves_the_store_on_loopback(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    FilledRun(store, "RUN-1")
    proc, base = start_watch(store)
    try:
        assert base.startswith("http://127.0.0.1:")
        status, body = get(base + "/api/runs")
        assert status == 200 and '"RUN-1"' in body
        status, page = get(base + "/")
        assert status == 200 and "/static/runs.js" in page
    finally:
        stop(proc)
    assert proc.returncode is not None


def test_beyond_loopback_the_token_is_required(tmp_path: Path) -> None:
    proc, base = start_watch(tmp_path / "runs.sqlite", host="0.0.0.0")
    port = base.rsplit(":", 1)[1]
    try:
        status, body = get(f"http://127.0.0.1:{port}/api/runs")
        assert status == 403 and "token" in body
        status, body = get(f"http://127.0.0.1:{port}/api/runs?token={TOKEN}")
        assert status == 200 and "no store at" in body
    finally:
        stop(proc)


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = mosaic("watch", "--store", str(tmp_path / "s.sqlite"), "--port", str(port))
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--port", "70000"], "is not a port number"),
        (["--token", "short"], "at least 16 characters"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], message: str) -> None:
    done = mosaic("watch", *args)
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_without_the_extra_it_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from mosaic_sdk.cli import main\n"
        "sys.exit(main(['watch', '--port', '0']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "pip install 'mosaic-worker-sdk[watch]'" in done.stderr
