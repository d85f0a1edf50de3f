"""The run page offers the buttons the worker can take: pause, resume and stop for a worker of
the control protocol, stop alone for one that reads no commands (the runner stops it with
SIGTERM). Before, every run got all three, and a non-protocol worker answered each with
``no_protocol``, stop included: nothing could stop it from the page."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.runner.control.control_socket import SOCKET_NAME
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.runner.storage.store import RunStore
from tests.watch.conftest import TOKEN

FIXTURES = Path(__file__).resolve().parents[1] / "runner" / "fixtures"
AUTH = {"X-Mosaic-Token": TOKEN}
CLASSES = {"control": "Control", "control_deaf": "Deaf", "control_v0": "V0"}
PROTOCOLS = {"control": 1, "control_deaf": None, "control_v0": 0}


def _start(store: Path, worker: str, run_id: str) -> subprocess.Popen[str]:
    old = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": str(FIXTURES) + (os.pathsep + old if old else ""),
        "MOSAIC_PLUGINS": f"{worker}=control_worker:{CLASSES[worker]}",
        "MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", worker, "--store", str(store)]
    argv += ["--run-id", run_id, "--no-preflight", "--json", "--grace", "2"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sock = runs_dir_for(store) / run_id / SOCKET_NAME
    deadline = time.monotonic() + 60
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"no control socket: {out} {err}")
        time.sleep(0.02)
    return proc


@pytest.mark.parametrize(
    ("worker", "buttons"),
    [
        ("control", ["pause", "resume", "stop"]),
        ("control_deaf", ["stop"]),
        ("control_v0", ["stop"]),  # issue 30: another protocol's stop answered an error
    ],
)
def test_the_buttons_are_what_the_worker_takes_and_stop_always_stops(
    client: TestClient, store: Path, worker: str, buttons: list[str]
) -> None:
    run_id = f"01JWATCHBUTTONS{worker.upper().replace('_', '')}".ljust(26, "0")[:26]
    proc = _start(store, worker, run_id)
    try:
        detail = client.get(f"/api/runs/{run_id}").json()
        assert detail["control"] is True and detail["control_commands"] == buttons
        if worker == "control_deaf":
            paused = client.post(f"/api/runs/{run_id}/control", json={"cmd": "pause"}, headers=AUTH)
            assert paused.json()["reply"]["error"]["code"] == "no_protocol"
        stop = client.post(f"/api/runs/{run_id}/control", json={"cmd": "stop"}, headers=AUTH)
        assert stop.json()["reply"]["ok"] is True, stop.text
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
    assert json.loads(out)["status"] == "cancelled", err
    with RunStore(store, readonly=True) as s:
        assert s.get_run(run_id)["control_protocol"] == PROTOCOLS[worker]
