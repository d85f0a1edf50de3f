"""A Session without a reader: it writes through a WorkerLink and is fed the worker's lines."""

from __future__ import annotations

import io
import json

import pytest

from mosaic_sdk.control.session import ControlCommandError, ControlTimeout, Session


class EchoLink:
    """A link whose "worker" answers every command at once, by feeding the session."""

    pid = 4242
    returncode = None

    def __init__(self) -> None:
        self.session: Session | None = None
        self.written: list[bytes] = []
        self.looks = 0
        self.broken = False

    def write_line(self, line: bytes) -> None:
        if self.broken:
            raise BrokenPipeError("the worker closed its stdin")
        self.written.append(line)
        command = json.loads(line)
        reply = {"type": "control_reply", "v": 1, "id": command["id"], "cmd": command["cmd"]}
        assert self.session is not None
        self.session.feed([json.dumps({**reply, "ok": True, "paused": False}).encode()])

    def close_stdin(self) -> None:
        pass

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float) -> int | None:
        return None

    def last_look(self) -> None:
        self.looks += 1

    def end(self, wait: float, grace: float) -> int | None:
        return 0

    def kill(self) -> int | None:
        return -9

    def note(self) -> str:
        return " (the echo worker)"


def test_a_fed_session_sends_through_its_link_and_keeps_what_it_is_fed() -> None:
    link = EchoLink()
    session = Session(link=link, timeout=1.0, run_id="fed")
    link.session = session
    assert session.ping().paused is False
    assert json.loads(link.written[0]) == {"v": 1, "id": "1", "cmd": "ping"}
    assert link.written[0].endswith(b"\n")
    session.feed(
        [
            b'{"type": "lifecycle", "event": "run_started", "seq": 0}',
            "not json at all",
            b"[1, 2]",
            '{"type": "init", "version": "1.0"}\n',
        ]
    )
    assert session.events() == ["run_started"]
    assert session.dialect_lines == [{"type": "init", "version": "1.0"}]
    assert session.pid == 4242 and session.poll() is None
    session.stop()
    assert link.looks == 1  # a last look at the tree before the worker is told to end
    session.end_of_output()
    with pytest.raises(ControlTimeout, match="closed its stdout.*the echo worker"):
        session.wait_for(lambda line: False, timeout=5.0, what="nothing")
    assert session.shutdown(timeout=1.0) == 0


def test_a_link_that_cannot_write_is_a_worker_gone_error() -> None:
    link = EchoLink()
    link.broken = True
    session = Session(link=link, timeout=1.0)
    with pytest.raises(ControlCommandError) as caught:
        session.ping()
    assert caught.value.code == "worker_gone"
    assert "closed its stdin" in caught.value.message and "the echo worker" in caught.value.message


def test_a_session_needs_exactly_one_way_to_the_worker() -> None:
    with pytest.raises(ValueError, match="either the worker's stdin .* or a link"):
        Session()
    with pytest.raises(ValueError, match="not both"):
        Session(io.BytesIO(), link=EchoLink())


class NewerWorkerLink(EchoLink):
    """A worker on a newer SDK: its replies carry fields this SDK does not know yet."""

    def write_line(self, line: bytes) -> None:
        command = json.loads(line)
        assert self.session is not None
        self.session.feed(
            [
                json.dumps(
                    {
                        "type": "control_reply", "v": 1, "id": command["id"],
                        "cmd": command["cmd"], "ok": True, "step_index": 3,
                        "frame": {"fastlane_run_id": "r", "frames_published": 2,
                                  "pending": False, "ring_generation": 1},
                        "latency_us": 12, "run_id": "r", "seq": 7,
                    }
                )
            ]
        )  # fmt: skip


def test_a_session_reads_replies_with_fields_it_does_not_know() -> None:
    link = NewerWorkerLink()
    session = Session(link=link, timeout=1.0, run_id="newer")
    link.session = session
    reply = session.step()
    assert reply.step_index == 3
    assert reply.frame is not None and reply.frame.frames_published == 2
    assert session.last_frame == reply.frame


def test_what_a_session_knows_of_a_reply_is_still_checked() -> None:
    from mosaic_sdk.control.protocol import read_reply

    with pytest.raises(ValueError, match="frames_published"):
        read_reply(
            {"type": "control_reply", "v": 1, "id": "1", "cmd": "step", "ok": True,
             "frame": {"fastlane_run_id": "r", "frames_published": -1, "extra": 1}}
        )  # fmt: skip
    with pytest.raises(ValueError, match="v"):
        read_reply({"type": "control_reply", "v": 2, "id": "1", "cmd": "ping", "ok": True})
