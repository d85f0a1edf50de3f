"""The worker side in one process: ControlChannel answers, parks the loop, runs checkpoints."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from pathlib import Path

import pytest

from mosaic_sdk.contract import WorkerCapabilities
from mosaic_sdk.control.channel import ControlChannel
from mosaic_sdk.telemetry import TelemetryEmitter


class Wire:
    def __init__(self, capabilities: WorkerCapabilities | None = None) -> None:
        self.buf = io.StringIO()
        self.emitter = TelemetryEmitter("r", self.buf, flush_interval=0)
        self.cancel = threading.Event()
        self.stopped = False
        self.channel = ControlChannel(
            self.emitter, self.cancel, capabilities=capabilities, on_stop=self._on_stop
        )

    def _on_stop(self) -> None:
        self.stopped = True

    def send(self, **command: object) -> None:
        self.channel.handle_line(json.dumps({"v": 1, **command}))

    def lines(self) -> list[dict]:
        return [json.loads(x) for x in self.buf.getvalue().splitlines()]

    def replies(self) -> list[dict]:
        return [x for x in self.lines() if x["type"] == "control_reply"]


def test_ping_answers_with_the_id_and_the_pause_state() -> None:
    wire = Wire()
    wire.send(id="p1", cmd="ping")
    (reply,) = wire.replies()
    assert (reply["id"], reply["cmd"], reply["ok"], reply["paused"]) == ("p1", "ping", True, False)


def test_pause_parks_the_loop_until_resume_without_spinning() -> None:
    wire = Wire()
    wire.send(id="1", cmd="pause")
    steps: list[int] = []

    def loop() -> None:
        for i in range(3):
            if wire.channel.safe_point():
                return
            steps.append(i)

    worker = threading.Thread(target=loop)
    worker.start()
    time.sleep(0.3)
    assert steps == [] and worker.is_alive() and wire.channel.paused
    assert [x["event"] for x in wire.lines() if x["type"] == "lifecycle"] == ["paused"]
    wire.send(id="2", cmd="resume")
    worker.join(5)
    assert steps == [0, 1, 2]
    events = [x for x in wire.lines() if x["type"] == "lifecycle"]
    assert [e["event"] for e in events] == ["paused", "resumed"]
    assert events[0]["payload"] == {"command_id": "1"}
    assert events[1]["payload"]["paused_seconds"] >= 0.2
    assert [r["paused"] for r in wire.replies()] == [True, False]


def test_a_parked_loop_uses_no_cpu() -> None:
    wire = Wire()
    wire.send(id="1", cmd="pause")
    used: list[float] = []

    def loop() -> None:
        begin = time.thread_time()
        wire.channel.safe_point()
        used.append(time.thread_time() - begin)

    worker = threading.Thread(target=loop)
    worker.start()
    time.sleep(0.5)
    wire.send(id="2", cmd="resume")
    worker.join(5)
    assert used and used[0] < 0.05  # a spin would burn most of the 0.5 s


def test_stop_wakes_a_parked_loop_and_cancels() -> None:
    wire = Wire()
    wire.send(id="1", cmd="pause")
    result: list[bool] = []
    worker = threading.Thread(target=lambda: result.append(wire.channel.safe_point()))
    worker.start()
    time.sleep(0.1)
    wire.send(id="2", cmd="stop")
    worker.join(5)
    assert result == [True] and wire.cancel.is_set() and wire.stopped
    assert wire.replies()[-1]["stopping"] is True


@pytest.mark.parametrize(
    ("first", "second"),
    [(None, "resume"), ("pause", "pause")],
    ids=["resume-running", "pause-twice"],
)
def test_out_of_order_pause_and_resume_are_errors(first: str | None, second: str) -> None:
    wire = Wire()
    if first:
        wire.send(id="a", cmd=first)
    wire.send(id="b", cmd=second)
    reply = wire.replies()[-1]
    assert reply["ok"] is False and reply["id"] == "b"
    assert reply["error"]["code"] == "out_of_order" and reply["error"]["hint"]


def test_checkpoint_runs_the_callback_at_the_safe_point(tmp_path: Path) -> None:
    wire = Wire(WorkerCapabilities(worker_type="w", supports_checkpointing=True))
    calls: list[int] = []

    def save() -> Path:
        calls.append(threading.get_ident())
        path = tmp_path / "ckpt.json"
        path.write_text("{}")
        return path

    wire.channel.on_checkpoint(save)
    wire.send(id="c", cmd="checkpoint")
    assert calls == [] and wire.replies() == []  # not on the reader's thread
    assert wire.channel.safe_point() is False
    assert calls == [threading.get_ident()]
    (reply,) = wire.replies()
    assert reply["ok"] and reply["checkpoint_path"] == str(tmp_path / "ckpt.json")


def test_a_failing_checkpoint_is_an_error_reply_and_the_run_goes_on() -> None:
    wire = Wire()

    def save() -> str:
        raise OSError("disk full")

    wire.channel.on_checkpoint(save)
    wire.send(id="c", cmd="checkpoint")
    assert wire.channel.safe_point() is False
    (reply,) = wire.replies()
    assert reply["error"]["code"] == "failed" and "disk full" in reply["error"]["message"]


@pytest.mark.parametrize(
    ("capabilities", "cmd", "needed"),
    [
        (WorkerCapabilities(worker_type="w"), "checkpoint", "supports_checkpointing"),
        (WorkerCapabilities(worker_type="w"), "pause", "supports_pause_resume"),
        (None, "checkpoint", "checkpoint callback"),
    ],
)
def test_commands_the_worker_does_not_claim_are_not_supported(
    capabilities: WorkerCapabilities | None, cmd: str, needed: str
) -> None:
    wire = Wire(capabilities)
    wire.send(id="x", cmd=cmd)
    (reply,) = wire.replies()
    assert reply["error"]["code"] == "not_supported" and needed in reply["error"]["message"]
    assert not wire.channel.paused


@pytest.mark.parametrize("cmd", ["reset", "step", "close"])
def test_interactive_commands_to_a_training_run_are_not_interactive(cmd: str) -> None:
    wire = Wire()
    wire.send(id="i", cmd=cmd)
    (reply,) = wire.replies()
    assert reply["error"]["code"] == "not_interactive" and "mode" in reply["error"]["hint"]


def test_bad_lines_get_one_error_each_and_the_channel_goes_on() -> None:
    wire = Wire()
    for text in ["{not json", "[]", '{"v": 1, "id": "u", "cmd": "dance"}', '{"v": 9}']:
        wire.channel.handle_line(text)
    wire.send(id="p", cmd="ping")
    codes = [r["error"]["code"] if not r["ok"] else "ok" for r in wire.replies()]
    assert codes == [
        "malformed_json",
        "malformed_json",
        "unknown_command",
        "unsupported_version",
        "ok",
    ]


def test_eof_ends_the_reader_and_nothing_else() -> None:
    wire = Wire()
    read, write = os.pipe()
    os.write(write, b'{"v": 1, "id": "1", "cmd": "ping"}\n\n')
    os.close(write)
    thread = wire.channel.start(os.fdopen(read, "rb"))
    thread.join(5)
    assert wire.channel.eof.is_set() and not wire.cancel.is_set()
    assert [r["id"] for r in wire.replies()] == ["1"]
    assert wire.channel.safe_point() is False


def test_the_deployed_dialect_in_a_training_run() -> None:
    wire = Wire()
    for cmd in ("ping", "step", "dance", "stop"):
        wire.channel.handle_line(json.dumps({"cmd": cmd}))
    assert wire.lines() == [
        {"type": "pong"},
        {"type": "error", "message": "'step' needs a run in interactive mode"},
        {"type": "error", "message": "unknown command 'dance'; known: reset, step, ping, stop"},
        {"type": "stopped"},
    ]
    assert wire.cancel.is_set()
