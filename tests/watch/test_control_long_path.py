"""mosaic watch drives a real run through the runner's control client, also when the run
directory's path is too long for an AF_UNIX address (the client reaches it through
/proc/self/fd): a real ``mosaic run`` of a worker that speaks the control protocol, paused,
resumed and stopped from the run page's endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.runner.control.control_socket import SOCKET_NAME
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.runner.storage.store import RunStore
from tests.watch.conftest import TOKEN

FIXTURES = Path(__file__).resolve().parents[1] / "runner" / "fixtures"
AUTH = {"X-Mosaic-Token": TOKEN}
RUN_ID = "01JWATCHLONGPATHRUN0000000"
#: The run directory's path is at least this long (AF_UNIX takes about 107 bytes).
LONG = 147


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store whose run directories have paths of LONG bytes or more."""
    base = len(os.fsencode(runs_dir_for(tmp_path / "runs.sqlite") / RUN_ID))
    deep = tmp_path / ("d" * max(1, LONG - base))
    deep.mkdir()
    store = deep / "runs.sqlite"
    assert len(os.fsencode(runs_dir_for(store) / RUN_ID)) >= LONG
    return store


@pytest.fixture
def running(store: Path) -> Iterator[subprocess.Popen[str]]:
    """``mosaic run control`` (fixtures/control_worker.py) until its socket is there."""
    old = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": str(FIXTURES) + (os.pathsep + old if old else ""),
        "MOSAIC_PLUGINS": "control=control_worker:Control",
        "MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", "control", "--store", str(store)]
    argv += ["--run-id", RUN_ID, "--no-preflight", "--json"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        sock = runs_dir_for(store) / RUN_ID / SOCKET_NAME
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no control socket within 60 s"
            time.sleep(0.02)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def test_pause_resume_stop_through_a_long_run_directory(
    client: TestClient, store: Path, running: subprocess.Popen[str]
) -> None:
    detail = client.get(f"/api/runs/{RUN_ID}").json()
    assert detail["control"] is True and len(os.fsencode(detail["run_dir"])) >= LONG
    replies = {}
    for cmd in ("pause", "resume", "stop"):
        got = client.post(f"/api/runs/{RUN_ID}/control", json={"cmd": cmd}, headers=AUTH)
        assert got.status_code == 200, got.text
        replies[cmd] = got.json()["reply"]
        assert replies[cmd]["ok"] is True, replies[cmd]
        assert replies[cmd]["cmd"] == cmd
    assert replies["pause"]["paused"] is True and replies["resume"]["paused"] is False
    out, err = running.communicate(timeout=60)
    assert json.loads(out)["status"] == "cancelled", err
    with RunStore(store, readonly=True) as s:
        assert s.get_run(RUN_ID)["status"] == "cancelled"
