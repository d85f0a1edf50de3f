"""The run page's pause/resume/stop: relayed to the run's control socket (a fake runner here,
speaking the wire of the control protocol: one JSON line in, one control_reply line out)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.watch.conftest import TOKEN
from tests.watch.storefill import FilledRun

AUTH = {"X-Mosaic-Token": TOKEN}


class FakeRunner:
    """A control.sock that records each request and answers as told."""

    def __init__(self, path: Path, reply: Any = "ok") -> None:
        self.path, self.reply, self.requests = path, reply, []  # type: list[dict[str, Any]]
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        path.chmod(0o600)  # as the runner makes it: the client trusts no other mode
        self.server.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn, conn.makefile("rwb") as f:
                request = json.loads(f.readline())
                self.requests.append(request)
                if self.reply == "silent":
                    continue
                if self.reply == "garbage":
                    f.write(b"this is not json\n")
                else:
                    f.write(
                        json.dumps(
                            {
                                "type": "control_reply",
                                "v": 1,
                                "id": "x1",
                                "cmd": request["cmd"],
                                "ok": True,
                            }
                        ).encode()
                        + b"\n"
                    )
                f.flush()

    def close(self) -> None:
        # close() alone leaves a thread blocked in accept() holding the listening socket open
        # (Linux), so a later connect could still be answered; shutdown() wakes the accept.
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        self.thread.join(timeout=5)


@pytest.fixture
def runner(tmp_path: Path, store: Path) -> Iterator[FakeRunner]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    FilledRun(store, "RUN-1", run_dir=run_dir)
    fake = FakeRunner(run_dir / "control.sock")
    try:
        yield fake
    finally:
        fake.close()


def test_buttons_are_offered_only_with_a_control_socket(
    client: TestClient, store: Path, runner: FakeRunner, tmp_path: Path
) -> None:
    assert client.get("/api/runs/RUN-1").json()["control"] is True
    FilledRun(store, "RUN-2", run_dir=tmp_path)  # a run directory without control.sock
    assert client.get("/api/runs/RUN-2").json()["control"] is False
    refused = client.post("/api/runs/RUN-2/control", json={"cmd": "pause"}, headers=AUTH)
    assert refused.status_code == 409 and "no control socket" in refused.json()["error"]


@pytest.mark.parametrize("cmd", ["pause", "resume", "stop"])
def test_each_button_sends_its_command(client: TestClient, runner: FakeRunner, cmd: str) -> None:
    got = client.post("/api/runs/RUN-1/control", json={"cmd": cmd}, headers=AUTH)
    assert got.status_code == 200
    assert got.json()["reply"]["ok"] is True and got.json()["reply"]["cmd"] == cmd
    assert runner.requests == [{"cmd": cmd}]


def test_only_the_three_commands_are_relayed(client: TestClient, runner: FakeRunner) -> None:
    for body in ({"cmd": "checkpoint"}, {"cmd": None}, ["pause"], "x"):
        got = client.post("/api/runs/RUN-1/control", json=body, headers=AUTH)
        assert got.status_code == 400 and "pause, resume, stop" in got.json()["error"]
    assert runner.requests == []


def test_a_reply_that_is_not_json_is_a_refusal(client: TestClient, runner: FakeRunner) -> None:
    runner.reply = "garbage"
    reply = client.post("/api/runs/RUN-1/control", json={"cmd": "stop"}, headers=AUTH).json()
    assert reply["reply"]["ok"] is False and reply["reply"]["error"]["code"] == "bad_reply"


def test_a_runner_gone_is_a_refusal_not_an_error(client: TestClient, runner: FakeRunner) -> None:
    runner.close()  # the socket file stays, nobody listens
    got = client.post("/api/runs/RUN-1/control", json={"cmd": "pause"}, headers=AUTH)
    assert got.status_code == 200
    assert got.json()["reply"]["ok"] is False
    assert got.json()["reply"]["error"]["code"] == "refused"  # the runner client's code


def test_finished_runs_have_no_buttons(client: TestClient, store: Path, runner: FakeRunner) -> None:
    from mosaic_sdk.runner.storage.store import RunStore

    with RunStore(store) as s:
        s.finish_run("RUN-1", "completed", 0)
    assert client.get("/api/runs/RUN-1").json()["control"] is False
