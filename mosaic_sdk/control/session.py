"""Drive a worker over the control protocol from Python: :class:`Session`."""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mosaic_sdk.control.frames import FrameWaiter
from mosaic_sdk.control.link import PipeLink, WorkerLink
from mosaic_sdk.control.protocol import ControlTimeout, FrameRef, Reply, error_reply, read_reply
from mosaic_sdk.json_types import JsonObject

if TYPE_CHECKING:
    from mosaic_sdk.fastlane import FastLaneFrame

DEFAULT_TIMEOUT = 5.0
#: Seconds to wait for a started worker's first line (imports such as torch are slow).
START_TIMEOUT = 60.0
DIALECT_TYPES = frozenset(("init", "ready", "step", "episode_done", "stopped", "pong", "error"))


class ControlCommandError(RuntimeError):
    """The worker answered ``ok: false``."""

    def __init__(self, reply: Reply) -> None:
        error = reply.error
        self.reply = reply
        self.code = error.code if error else "unknown"
        self.message = error.message if error else "no error given"
        self.hint = error.hint if error else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        super().__init__(f"{reply.cmd or 'command'} failed [{self.code}]: {self.message}{hint}")


class Session:
    """A control-protocol client on a worker's pipes (see the module docstring)."""

    def __init__(
        self,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None,
        *,
        process: subprocess.Popen[bytes] | None = None,
        link: WorkerLink | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        run_id: str | None = None,
        run_dir: Path | None = None,
    ) -> None:
        if (stdin is None) == (link is None):
            raise ValueError(
                "give a Session either the worker's stdin (a binary stream, with its Popen as "
                "process= if you have it) or a link= (a WorkerLink), not both and not neither"
            )
        if link is not None and process is not None:
            raise ValueError("process= goes with stdin=; a link= knows its own process")
        if link is None:
            assert stdin is not None
            link = PipeLink(stdin, process)
        #: How the session writes to the worker and ends it (see :mod:`mosaic_sdk.control.link`).
        self.link: WorkerLink = link
        #: The worker's ``Popen`` when the session was given one (``Session.launch``), else None.
        self.process = process
        self._stdout = stdout
        self.timeout = timeout
        self.run_id = run_id
        self.run_dir = run_dir
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._replies: dict[str, JsonObject] = {}
        self._waiting: set[str] = set()
        #: Replies whose id this session did not send (e.g. to a malformed line).
        self.unmatched: deque[dict[str, Any]] = deque()
        #: Telemetry lines (parsed) the worker wrote, in order.
        self.lines: list[dict[str, Any]] = []
        #: Lines of the deployed CleanRL dialect 1.0 (init, ready, step, ...), in order.
        self.dialect_lines: list[dict[str, Any]] = []
        #: True once the worker's stdout is closed (:meth:`end_of_output`).
        self.closed_stdout = False
        self._output_done = threading.Event()
        self._ending = False
        #: The ``frame`` of the last reply that had one (reset, step, close).
        self.last_frame: FrameRef | None = None
        self._frames = FrameWaiter()
        self._reader: threading.Thread | None = None
        if stdout is not None:
            self._reader = threading.Thread(target=self._read, name="mosaic-session", daemon=True)
            self._reader.start()

    @classmethod
    def launch(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        run_id: str | None = None,
        run_dir: Path | None = None,
    ) -> Session:
        """Start ``argv`` with its stdin and stdout as pipes (stderr is inherited).

        A plain ``Popen``: ending the session ends that one process, not what it started. To
        run an installed worker as ``mosaic run`` does (its whole process tree supervised),
        use :func:`mosaic_sdk.runner.start_session`."""
        process = subprocess.Popen(  # noqa: S603 - the caller's own worker command
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        assert process.stdin is not None and process.stdout is not None
        return cls(
            process.stdin, process.stdout, process=process, timeout=timeout, run_id=run_id,
            run_dir=run_dir,
        )  # fmt: skip

    def ping(self, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("ping", timeout=timeout, **kw)

    def pause(self, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("pause", timeout=timeout, **kw)

    def resume(self, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("resume", timeout=timeout, **kw)

    def stop(self, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("stop", timeout=timeout, **kw)

    def checkpoint(self, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("checkpoint", timeout=timeout, **kw)

    def reset(
        self, seed: int | None = None, *, timeout: float | None = None, **kw: object
    ) -> Reply:
        return self.request("reset", timeout=timeout, seed=seed, **kw)

    def step(self, action: object = None, *, timeout: float | None = None, **kw: object) -> Reply:
        if action is not None:
            kw["action"] = action
        return self.request("step", timeout=timeout, **kw)

    def act(self, observation: object, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("act", timeout=timeout, observation=observation, **kw)

    def close(self, *, timeout: float | None = None, **kw: object) -> Reply:
        return self.request("close", timeout=timeout, **kw)

    def request(self, cmd: str, *, timeout: float | None = None, **args: object) -> Reply:
        """Send ``{"v": 1, "id": ..., "cmd": cmd, **args}`` and return the reply."""
        cid = str(next(self._ids))
        if cmd in ("close", "stop"):
            self.link.last_look()  # what runs below the worker now must end with it
        with self._cond:
            self._waiting.add(cid)
        try:
            self.send_line(json.dumps({"v": 1, "id": cid, "cmd": cmd, **args}))
            data = self._await(cid, cmd, self.timeout if timeout is None else timeout)
        finally:
            with self._cond:
                self._waiting.discard(cid)
                self._replies.pop(cid, None)
        reply = read_reply(data)
        if not reply.ok:
            raise ControlCommandError(reply)
        if cmd in ("close", "stop"):
            self._ending = True  # the worker is on its way out: shutdown waits for it
        if reply.frame is not None:
            self.last_frame = reply.frame
        return reply

    def wait_frame(
        self, reply: Reply | None = None, *, timeout: float | None = None
    ) -> FastLaneFrame:
        """Wait until the frame of ``reply``'s state (default: the last reply with a
        ``frame``) is in the run's FastLane segment; return the newest frame there (a
        :class:`~mosaic_sdk.fastlane.FastLaneFrame`).

        A reply whose ``frame.pending`` is true names a state whose frame the worker publishes
        within one frame interval, as frame ``frames_published + 1``, unless another command
        moves on first (then the frame returned shows a later state). Raises ``ValueError``
        when there is no frame to wait for (FastLane off, no reset yet) and
        :class:`ControlTimeout` when it does not come in time.
        """
        ref = self.last_frame if reply is None else reply.frame
        if ref is None:
            raise ValueError(
                "no frame to wait for: the reply has no frame (FastLane is off, or no "
                "reset/step yet); start the session with FastLane on and reset first"
            )
        return self._frames.wait(
            ref, self.timeout if timeout is None else timeout, note=self.link.note
        )

    def send_line(self, text: str) -> None:
        """Write one raw line to the worker's stdin (e.g. a dialect-1.0 command)."""
        try:
            self.link.write_line(text.encode("utf-8") + b"\n")
        except OSError as exc:
            message = f"cannot write to the worker's stdin ({exc}){self.link.note()}"
            reply = error_reply(None, None, "worker_gone", message, "start a new session")
            raise ControlCommandError(Reply.model_validate(reply)) from None

    def next_unmatched(self, timeout: float | None = None) -> Reply:
        """The next reply to a line this session did not send as a command (e.g. malformed)."""
        wait = self.timeout if timeout is None else timeout
        with self._cond:
            self._cond.wait_for(lambda: self.unmatched or self.closed_stdout, wait)
            if not self.unmatched:
                raise ControlTimeout(f"no error reply came{self.link.note()}")
            return read_reply(self.unmatched.popleft())

    def feed(self, lines: Iterable[bytes | str]) -> None:
        """Take lines the worker wrote on stdout (without or with their newline), in order.
        Lines that are not a JSON object are dropped (library output that escaped the
        worker's claim on stdout). Thread-safe; whoever reads the worker's stdout calls it."""
        taken = []
        for raw in lines:
            try:
                data = json.loads(raw)
            except ValueError:
                continue
            if isinstance(data, dict):
                taken.append(data)
        if not taken:
            return
        with self._cond:
            for data in taken:
                self._take(data)
            self._cond.notify_all()

    def end_of_output(self) -> None:
        """The worker's stdout is closed: nothing more will be fed (waits end at once)."""
        with self._cond:
            self.closed_stdout = True
            self._output_done.set()
            self._cond.notify_all()

    def _read(self) -> None:
        assert self._stdout is not None
        try:
            for raw in iter(self._stdout.readline, b""):
                self.feed((raw,))
        except (OSError, ValueError):
            pass
        finally:
            self.end_of_output()

    def _take(self, data: JsonObject) -> None:
        kind = data.get("type")
        if kind == "control_reply":
            cid = data.get("id")
            if isinstance(cid, str) and cid in self._waiting:
                self._replies[cid] = data
            else:
                self.unmatched.append(data)
        elif kind in DIALECT_TYPES and "seq" not in data:
            self.dialect_lines.append(data)
        else:
            self.lines.append(data)

    def _await(self, cid: str, cmd: str, timeout: float) -> JsonObject:
        with self._cond:
            self._cond.wait_for(lambda: cid in self._replies or self.closed_stdout, timeout)
            if cid in self._replies:
                return self._replies[cid]
            if self.closed_stdout:
                raise ControlTimeout(
                    f"the worker closed its stdout before answering {cmd}{self.link.note()}"
                )
            raise ControlTimeout(
                f"no reply to {cmd} within {timeout:g} s{self.link.note()}; "
                "is it a worker that speaks the control protocol (control_protocol=1)?"
            )

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        timeout: float | None = None,
        what: str = "a line",
    ) -> dict[str, Any]:
        """Wait until a telemetry or dialect line satisfies ``predicate``; returns it."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        seen_lines = seen_dialect = 0
        with self._cond:
            while True:
                for line in self.lines[seen_lines:] + self.dialect_lines[seen_dialect:]:
                    if predicate(line):
                        return line
                seen_lines, seen_dialect = len(self.lines), len(self.dialect_lines)
                left = deadline - time.monotonic()
                if self.closed_stdout or left <= 0:
                    why = "the worker closed its stdout" if self.closed_stdout else "timed out"
                    raise ControlTimeout(f"waiting for {what}: {why}{self.link.note()}")
                self._cond.wait(left)

    def events(self) -> list[str]:
        """The lifecycle events seen so far, in order."""
        with self._cond:
            return [str(x["event"]) for x in self.lines if x.get("type") == "lifecycle"]

    @property
    def pid(self) -> int | None:
        """The worker's pid (None when the session does not know it)."""
        return self.link.pid

    @property
    def returncode(self) -> int | None:
        """The worker's exit code once it has exited (None before)."""
        return self.link.returncode

    def poll(self) -> int | None:
        """The worker's exit code, or None while it runs."""
        return self.link.poll()

    def wait_exit(self, timeout: float | None = None) -> int | None:
        """The worker's exit code, waiting up to ``timeout`` seconds (None: still running);
        once it has exited, also waits for the rest of its output to be read."""
        wait = self.timeout if timeout is None else timeout
        code = self.link.wait(wait)
        if code is None:
            return None
        self._output_done.wait(max(5.0, wait))  # every line it wrote is now in ``lines``
        return code

    def kill(self) -> None:
        """End the worker now (SIGKILL; under the runner its whole process tree)."""
        self.link.kill()
        self._output_done.wait(1.0 if self._reader is not None else 0)
        self._close_stdout()

    def _close_stdout(self) -> None:
        self._frames.close()
        if self._stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                self._stdout.close()

    def close_stdin(self) -> None:
        """Close the worker's stdin (EOF): a training run goes on, an interactive one ends."""
        self.link.last_look()
        self.link.close_stdin()

    def shutdown(self, timeout: float = 10.0) -> int | None:
        """End the session: close stdin (an interactive run completes on EOF), then SIGTERM (a
        training run ends with run_cancelled, as on ``stop``), then SIGKILL ``timeout`` seconds
        later (under the runner: of the whole process tree); returns the exit code. After a
        ``close`` or ``stop`` reply the worker gets ``timeout`` seconds to exit on its own,
        else 2 s."""
        self.link.last_look()
        code = self.link.end(wait=timeout if self._ending else min(timeout, 2.0), grace=timeout)
        if code is not None:
            self._output_done.wait(5.0)
        self._close_stdout()
        return code

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
