"""Units of the runner's control channel: the worker's stdin, the relay, the socket, the keys."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mosaic_sdk.runner.control.control_client import ControlClientError, check_socket, send_command
from mosaic_sdk.runner.control.control_keys import KeyReader
from mosaic_sdk.runner.control.control_relay import ControlRelay
from mosaic_sdk.runner.control.control_socket import SOCKET_NAME, ControlServer, socket_address
from mosaic_sdk.runner.supervision.stdin import StdinClosed, WorkerStdin
from tests.conftest import returns

# -- the worker's stdin ------------------------------------------------------------------------


def _pipe() -> tuple[int, WorkerStdin]:
    r, w = os.pipe()
    return r, WorkerStdin(os.fdopen(w, "wb", buffering=0), pid=1)


def test_concurrent_writes_never_interleave() -> None:
    r, stdin = _pipe()
    got = bytearray()
    reader = threading.Thread(target=lambda: got.extend(_read_all(r)))
    reader.start()
    lines = [
        json.dumps({"id": f"{t}-{i}", "pad": "x" * 5000}).encode()
        for t in range(4)
        for i in range(50)
    ]

    def write(part: list[bytes]) -> None:
        for line in part:
            stdin.write_line(line)

    threads = [threading.Thread(target=write, args=(lines[t::4],)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stdin.close()
    reader.join()
    os.close(r)
    assert sorted(bytes(got).splitlines()) == sorted(lines)


def _read_all(fd: int) -> bytes:
    out = b""
    while chunk := os.read(fd, 65536):
        out += chunk
    return out


def test_a_closed_reader_is_a_clear_error_not_a_broken_pipe() -> None:
    r, stdin = _pipe()
    os.close(r)
    with pytest.raises(StdinClosed, match="closed its stdin or exited"):
        stdin.write_line(b'{"cmd": "ping"}')
    with pytest.raises(StdinClosed, match="closed its stdin"):  # and stays so
        stdin.write_line(b'{"cmd": "ping"}')
    stdin.close()


def test_a_worker_that_does_not_read_is_a_timeout_not_a_hang() -> None:
    r, stdin = _pipe()
    filler = b"x" * 4000

    def fill() -> None:
        for _ in range(1000):
            stdin.write_line(filler, timeout=0.2)

    with pytest.raises(StdinClosed, match="not reading its stdin"):
        returns(fill)  # a hang guard: a write that blocks forever fails here
    stdin.close()
    os.close(r)


def test_no_pipe_says_so() -> None:
    with pytest.raises(StdinClosed, match="does not claim the control protocol"):
        WorkerStdin(None, pid=1).write_line(b"{}")


# -- the relay ----------------------------------------------------------------------------------


class FakeWorker:
    """Reads what the relay writes and answers through relay.on_reply (as the ingest would)."""

    def __init__(self, relay: ControlRelay, answer: bool = True) -> None:
        self.relay = relay
        self.r, self.stdin = _pipe()
        self.seen: list[dict] = []
        self.answer = answer
        relay.attach(self.stdin)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with os.fdopen(self.r, "rb") as fh:
            for raw in fh:
                msg = json.loads(raw)
                self.seen.append(msg)
                if self.answer:
                    self.relay.on_reply(
                        {
                            "type": "control_reply",
                            "v": 1,
                            "id": msg["id"],
                            "cmd": msg["cmd"],
                            "ok": True,
                        }
                    )


def test_relay_assigns_ids_writes_v1_and_returns_the_matching_reply() -> None:
    relay = ControlRelay("w", 1)
    worker = FakeWorker(relay)
    first = relay.request({"cmd": "ping"})
    second = relay.request({"cmd": "pause", "id": "mine"})
    assert first["ok"] and first["cmd"] == "ping" and first["id"] != second["id"]
    assert second["id"] == "mine"
    assert worker.seen[0] == {"v": 1, "id": first["id"], "cmd": "ping"}
    assert worker.seen[1] == {"v": 1, "id": "mine", "cmd": "pause"}
    worker.stdin.close()


def test_relay_matches_replies_by_id_out_of_order() -> None:
    relay = ControlRelay("w", 1)
    worker = FakeWorker(relay, answer=False)
    replies: dict[str, dict] = {}
    threads = [
        threading.Thread(
            target=lambda i=i: replies.update({i: relay.request({"cmd": "ping", "id": i})})
        )
        for i in ("a", "b", "c")
    ]
    for t in threads:
        t.start()
    while len(worker.seen) < 3:
        time.sleep(0.01)
    for i in ("c", "a", "b"):
        relay.on_reply({"type": "control_reply", "id": i, "cmd": "ping", "ok": True, "tag": i})
    for t in threads:
        t.join()
    assert {k: v["tag"] for k, v in replies.items()} == {"a": "a", "b": "b", "c": "c"}
    worker.stdin.close()


def test_relay_times_out_with_a_runner_reply_and_ignores_the_late_one() -> None:
    relay = ControlRelay("w", 1, reply_timeout=0.2)
    worker = FakeWorker(relay, answer=False)
    reply = relay.request({"cmd": "checkpoint"})
    assert reply["ok"] is False and reply["source"] == "runner"
    assert reply["error"]["code"] == "timeout" and "0.2 s" in reply["error"]["message"]
    relay.on_reply({"type": "control_reply", "id": reply["id"], "ok": True})  # no one waits
    worker.stdin.close()


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ([1, 2], "malformed_request"),
        ({}, "malformed_request"),
        ({"cmd": 3}, "malformed_request"),
        ({"cmd": "ping", "id": 7}, "malformed_request"),
        ({"cmd": "ping", "id": ""}, "malformed_request"),
        ({"cmd": "ping", "v": 2}, "malformed_request"),
        ({"cmd": "dance"}, "unknown_command"),
    ],
)
def test_relay_refuses_bad_requests_without_writing(request_: object, code: str) -> None:
    relay = ControlRelay("w", 1)
    worker = FakeWorker(relay)
    reply = relay.request(request_)
    assert reply["ok"] is False and reply["error"]["code"] == code
    assert reply["error"]["message"] and reply["error"]["hint"]
    time.sleep(0.05)
    assert worker.seen == []
    worker.stdin.close()


def test_relay_without_protocol_or_with_another_version() -> None:
    assert ControlRelay("w", None).request({"cmd": "ping"})["error"]["code"] == "no_protocol"
    stopped: list[str] = []
    relay = ControlRelay("w", None, stop_without_protocol=stopped.append)
    assert relay.request({"cmd": "pause"})["error"]["code"] == "no_protocol" and not stopped
    reply = relay.request({"cmd": "stop", "id": "s1"})
    assert reply["ok"] is True and reply["id"] == "s1" and reply["via"] == "SIGTERM"
    assert stopped and "SIGTERM" in stopped[0]
    reply = ControlRelay("w", 2).request({"cmd": "ping"})
    assert reply["error"]["code"] == "unsupported_protocol" and "2" in reply["error"]["message"]


@pytest.mark.parametrize("protocol", [0, 2, -1])
def test_relay_stops_a_worker_of_another_protocol_with_the_signal(protocol: int) -> None:
    # issue 30: control_protocol 0 (or 2) answered stop with unsupported_protocol
    stopped: list[str] = []
    relay = ControlRelay("w", protocol, stop_without_protocol=stopped.append)
    assert relay.request({"cmd": "pause"})["error"]["code"] == "unsupported_protocol"
    assert not stopped
    reply = relay.request({"cmd": "stop", "id": "s1"})
    assert reply["ok"] is True and reply["id"] == "s1" and reply["via"] == "SIGTERM"
    assert stopped == [
        f"stop through the control socket (the worker speaks control protocol {protocol}, "
        "not 1: SIGTERM)"
    ]


def test_relay_duplicate_id_and_end_of_run() -> None:
    relay = ControlRelay("w", 1, reply_timeout=5)
    worker = FakeWorker(relay, answer=False)
    waiting: list[dict] = []
    t = threading.Thread(target=lambda: waiting.append(relay.request({"cmd": "ping", "id": "x"})))
    t.start()
    while not worker.seen:
        time.sleep(0.01)
    assert relay.request({"cmd": "ping", "id": "x"})["error"]["code"] == "duplicate_id"
    relay.end("its worker has exited")
    t.join(2)
    assert waiting[0]["error"]["code"] == "run_not_running"
    after = relay.request({"cmd": "ping"})
    assert after["error"]["code"] == "run_not_running" and "exited" in after["error"]["message"]
    worker.stdin.close()


def test_relay_reports_a_closed_stdin() -> None:
    relay = ControlRelay("w", 1)
    r, stdin = _pipe()
    relay.attach(stdin)
    os.close(r)
    reply = relay.request({"cmd": "ping"})
    assert (
        reply["error"]["code"] == "stdin_closed" and "closed its stdin" in reply["error"]["message"]
    )


# -- the socket ---------------------------------------------------------------------------------


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    return d


def test_socket_modes_round_trip_and_removal(run_dir: Path) -> None:
    relay = ControlRelay("w", 1)
    worker = FakeWorker(relay)
    server = ControlServer(run_dir, relay)
    path = run_dir / SOCKET_NAME
    assert (path.stat().st_mode & 0o777) == 0o600 and (run_dir.stat().st_mode & 0o777) == 0o700
    reply = send_command(path, {"cmd": "ping"})
    assert reply["ok"] is True and reply["cmd"] == "ping"
    server.close()
    assert not path.exists()
    with pytest.raises(ControlClientError) as err:
        send_command(path, {"cmd": "ping"})
    assert err.value.code == "socket_missing"
    worker.stdin.close()


def test_a_group_readable_run_dir_is_made_private(run_dir: Path) -> None:
    run_dir.chmod(0o755)
    server = ControlServer(run_dir, ControlRelay("w", None))
    assert (run_dir.stat().st_mode & 0o777) == 0o700
    server.close()


def test_a_long_run_dir_still_gets_a_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    assert len(str(deep / SOCKET_NAME)) > 108
    server = ControlServer(deep, ControlRelay("w", None))
    reply = send_command(deep / SOCKET_NAME, {"cmd": "ping"})
    assert reply["error"]["code"] == "no_protocol"
    server.close()
    assert not (deep / SOCKET_NAME).exists()


def _raw(path: Path, data: bytes) -> dict:
    with socket_address(path) as address:
        s = socket.socket(socket.AF_UNIX)
        s.connect(address)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    out = b""
    while chunk := s.recv(4096):
        out += chunk
    s.close()
    return json.loads(out)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"not json\n", "malformed_request"),
        (b"\xff\xfe\n", "malformed_request"),
        (b'{"cmd": "dance"}\n', "unknown_command"),
        (b'{"cmd": "ping"', "malformed_request"),  # no newline, then EOF: not JSON
        (b"", "malformed_request"),
        (b"[" * 70000 + b"\n", "malformed_request"),
    ],
)
def test_socket_bad_requests_get_one_runner_reply(run_dir: Path, data: bytes, code: str) -> None:
    server = ControlServer(run_dir, ControlRelay("w", 1))
    try:
        reply = _raw(run_dir / SOCKET_NAME, data)
        assert reply["ok"] is False and reply["source"] == "runner"
        assert reply["error"]["code"] == code
        # the server goes on
        assert _raw(run_dir / SOCKET_NAME, b'{"cmd": "ping"}\n')["error"]["code"] == "stdin_closed"
    finally:
        server.close()


def test_server_refuses_a_peer_of_another_uid(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.runner.control import control_socket

    server = ControlServer(run_dir, ControlRelay("w", 1))
    real = os.getuid()
    monkeypatch.setattr(control_socket, "peer_uid", lambda sock: real + 1)
    try:
        reply = _raw(run_dir / SOCKET_NAME, b'{"cmd": "ping"}\n')
    finally:
        server.close()
    assert (
        reply["error"]["code"] == "permission_denied" and str(real + 1) in reply["error"]["message"]
    )


def test_client_refuses_an_open_mode_or_a_plain_file(run_dir: Path) -> None:
    server = ControlServer(run_dir, ControlRelay("w", 1))
    path = run_dir / SOCKET_NAME
    try:
        path.chmod(0o666)
        with pytest.raises(ControlClientError, match="0666") as err:
            send_command(path, {"cmd": "ping"})
        assert err.value.code == "bad_mode"
    finally:
        server.close()
    path.write_text("")
    with pytest.raises(ControlClientError, match="not a socket"):
        check_socket(path)


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_client_refuses_a_socket_of_another_user(run_dir: Path) -> None:
    server = ControlServer(run_dir, ControlRelay("w", 1))
    path = run_dir / SOCKET_NAME
    try:
        os.chown(path, 65534, 65534)
        with pytest.raises(ControlClientError, match="uid 65534") as err:
            send_command(path, {"cmd": "ping"})
        assert err.value.code == "wrong_owner"
    finally:
        server.close()


def test_client_stale_socket_says_the_runner_is_gone(run_dir: Path) -> None:
    path = run_dir / SOCKET_NAME
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()  # bound, never listening: what a SIGKILLed runner leaves
    path.chmod(0o600)
    with pytest.raises(ControlClientError, match="runner of this run is gone") as err:
        send_command(path, {"cmd": "ping"})
    assert err.value.code == "refused"


# -- keys ---------------------------------------------------------------------------------------


def test_keys_from_a_terminal_send_commands_and_restore_it() -> None:
    import termios

    relay = ControlRelay("w", 1)
    worker = FakeWorker(relay)
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    keys = KeyReader(slave, relay).start()
    try:
        assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak while it runs
        os.write(master, b"pxp")
        deadline = time.monotonic() + 5
        while len(worker.seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        assert [m["cmd"] for m in worker.seen] == ["pause", "resume"]  # x is no key
        assert keys.note == "resume: ok" and keys.paused is False
        os.write(master, b"cs")
        while len(worker.seen) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [m["cmd"] for m in worker.seen[2:]] == ["checkpoint", "stop"]
    finally:
        keys.close()
    assert termios.tcgetattr(slave) == before
    os.close(master)
    os.close(slave)
    worker.stdin.close()


def test_keys_show_a_refusal() -> None:
    keys = KeyReader(0, ControlRelay("w", None))
    keys.press("c")
    assert keys.note is not None and keys.note.startswith("checkpoint: no_protocol")
    assert keys.press("?") is None


def test_no_keys_when_stdin_is_not_a_terminal() -> None:
    code = "from mosaic_sdk.cli.run import _stdin_is_terminal; print(_stdin_is_terminal())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"
