"""``mosaic control`` against a real ``mosaic run`` of a worker that speaks the protocol, each in
a process of its own."""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docs_snippets.blocks import blocks
from docs_snippets.transcript import compare, steps

from mosaic_sdk.runner import supervisor as supervisor_module
from mosaic_sdk.runner.control.control_relay import REPLY_TIMEOUT
from mosaic_sdk.runner.control.control_socket import SOCKET_NAME
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PLUGINS = (
    "control=control_worker:Control,control_deaf=control_worker:Deaf,control_v2=control_worker:V2,"
    "control_v0=control_worker:V0"
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.syspath_prepend(str(FIXTURES))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES) + (os.pathsep + old if old else ""))
    monkeypatch.setenv("MOSAIC_PLUGINS", PLUGINS)
    monkeypatch.setenv("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "1")
    return dict(os.environ)


class Run:
    """``mosaic run WORKER`` in a child process, until its control socket is there."""

    def __init__(
        self,
        env: dict[str, str],
        store: Path,
        worker: str = "control",
        *sets: str,
        run_id: str = "01JCONTROLTESTRUN0000000000",
        config: Path | None = None,
    ):
        self.store, self.run_id, self.env = store, run_id, env
        argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", worker, "--store", str(store)]
        argv += ["--run-id", self.run_id, "--no-preflight", "--json"]
        for s in sets:
            argv += ["--set", s]
        if config is not None:
            argv += ["--config", str(config)]
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.socket = runs_dir_for(store) / self.run_id / SOCKET_NAME
        deadline = time.monotonic() + 30
        while not self.socket.exists():
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "no control socket within 30 s"
            time.sleep(0.02)

    def control(self, command: str, *extra: str) -> tuple[int, dict | str]:
        out = subprocess.run(
            [sys.executable, "-m", "mosaic_sdk.cli", "control", self.run_id[:12], command]
            + ["--store", str(self.store), *extra],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if "--json" in extra:
            return out.returncode, json.loads(out.stdout)
        return out.returncode, out.stdout + out.stderr

    def events(self) -> list[dict]:
        with RunStore(self.store, readonly=True) as store:
            return store.events(self.run_id)

    def worker_pid(self) -> int:
        with RunStore(self.store, readonly=True) as store:
            return int(store.get_run(self.run_id)["worker_pid"])

    def finish(self, timeout: float = 30) -> dict:
        if self.proc.stdin is not None and self.proc.stdin.closed:
            self.proc.stdin = None  # communicate() would close it again
        out, err = self.proc.communicate(timeout=timeout)
        assert out, err
        return json.loads(out)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.communicate(timeout=30)


def test_commands_through_mosaic_control_and_stop(env: dict[str, str], tmp_path: Path) -> None:
    run = Run(env, tmp_path / "s.sqlite")
    try:
        assert (run.socket.stat().st_mode & 0o777) == 0o600
        assert (run.socket.parent.stat().st_mode & 0o777) == 0o700
        assert os.readlink(f"/proc/{run.worker_pid()}/fd/0").startswith("pipe:")
        code, reply = run.control("ping", "--json")
        assert code == 0 and reply["ok"] is True and reply["cmd"] == "ping" and reply["id"]
        code, reply = run.control("pause", "--json")
        assert code == 0 and reply["paused"] is True
        code, reply = run.control("pause", "--json")  # the worker refuses: exit 1
        assert code == 1 and reply["error"]["code"] == "bad_state"
        code, text = run.control("resume")
        assert code == 0 and "resume: ok (paused=False)" in text
        code, text = run.control("checkpoint")
        assert code == 0 and "path=checkpoint.pt" in text
        code, reply = run.control("stop", "--json")
        assert code == 0 and reply["ok"] is True
        result = run.finish()
    finally:
        run.kill()
    assert result["status"] == "cancelled", result
    assert not run.socket.exists()
    with RunStore(run.store, readonly=True) as store:  # every reply line is stored too
        replies = [
            json.loads(r["text"])
            for r in store.log_lines(run.run_id, stream="stdout")
            if '"control_reply"' in r["text"]
        ]
    assert [r["cmd"] for r in replies] == ["ping", "pause", "pause", "resume", "checkpoint", "stop"]
    code, text = run.control("ping")
    assert code == 3 and "has ended (cancelled)" in text


def test_a_worker_without_the_protocol(env: dict[str, str], tmp_path: Path) -> None:
    run = Run(env, tmp_path / "s.sqlite", "control_deaf")
    try:
        assert os.readlink(f"/proc/{run.worker_pid()}/fd/0") == "/dev/null"
        code, reply = run.control("pause", "--json")
        assert code == 1 and reply["error"]["code"] == "no_protocol" and reply["source"] == "runner"
        code, text = run.control("ping")
        assert code == 1 and "does not claim the control protocol" in text
        assert "only stop works for it" in text
        # stop still works: the runner cancels the run the usual way (SIGTERM, then SIGKILL)
        code, reply = run.control("stop", "--json")
        assert code == 0 and reply["ok"] is True and reply["source"] == "runner"
        assert reply["via"] == "SIGTERM"
        result = run.finish()
    finally:
        run.kill()
    assert result["status"] == "cancelled", result
    assert "stop through the control socket" in (result["error"] or ""), result


def test_another_protocol_version_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    run = Run(env, tmp_path / "s.sqlite", "control_v2")
    try:
        assert os.readlink(f"/proc/{run.worker_pid()}/fd/0") == "/dev/null"
        code, reply = run.control("ping", "--json")
        assert code == 1 and reply["error"]["code"] == "unsupported_protocol"
    finally:
        run.kill()


@pytest.mark.parametrize("worker", ["control_v0", "control_v2"])
def test_stop_stops_a_worker_of_another_protocol(
    env: dict[str, str], tmp_path: Path, worker: str
) -> None:
    # issue 30: a worker claiming control_protocol 0 (or 2) could not be stopped at all
    run = Run(env, tmp_path / "s.sqlite", worker)
    try:
        code, reply = run.control("pause", "--json")
        assert code == 1 and reply["error"]["code"] == "unsupported_protocol"
        code, reply = run.control("stop", "--json")
        assert code == 0 and reply["ok"] is True and reply["via"] == "SIGTERM", reply
        result = run.finish()
    finally:
        run.kill()
    assert result["status"] == "cancelled", result
    assert "speaks control protocol" in (result["error"] or ""), result


def test_a_worker_that_closed_its_stdin(env: dict[str, str], tmp_path: Path) -> None:
    run = Run(env, tmp_path / "s.sqlite", "control", "mode=closed", "lines=1000")
    try:
        deadline = time.monotonic() + 30  # it closes its stdin, then says run_started
        while not any(e["event"] == "run_started" for e in run.events()):
            assert time.monotonic() < deadline, "no run_started within 30 s"
            time.sleep(0.05)
        code, text = run.control("ping")
        assert code == 1 and "closed its stdin or exited" in text
        assert "Traceback" not in text and "BrokenPipe" not in text.replace("BrokenPipeError)", "")
        result = run.finish()  # the run goes on to its end; nothing is lost
    finally:
        run.kill()
    assert result["status"] == "completed" and result["counts"]["steps"] == 1000, result


def test_a_silent_worker_times_out(env: dict[str, str], tmp_path: Path) -> None:
    run = Run(env, tmp_path / "s.sqlite", "control", "mode=silent")
    try:
        code, reply = run.control("checkpoint", "--json")  # its subprocess timeout: the guard
        assert code == 1 and reply["error"]["code"] == "timeout"
        # it waited the relay's whole reply timeout (said, not timed: durations are benchmarks')
        assert "did not answer 'checkpoint'" in reply["error"]["message"]
        assert f"within {REPLY_TIMEOUT:g} s" in reply["error"]["message"]
    finally:
        run.kill()


def test_cli_errors_no_store_no_run_no_socket(env: dict[str, str], tmp_path: Path) -> None:
    from mosaic_sdk.cli import main

    store_path = tmp_path / "s.sqlite"
    assert main(["control", "01J", "ping", "--store", str(store_path)]) == 2
    with RunStore(store_path) as store:
        store.create_run("01JNOSOCKET000000000000000", "control", run_dir=tmp_path / "nowhere")
        store.mark_started("01JNOSOCKET000000000000000")
    assert main(["control", "01JX", "ping", "--store", str(store_path)]) == 2
    assert main(["control", "01JNOSOCKET", "ping", "--store", str(store_path), "--json"]) == 3


def test_cli_says_socket_missing(
    env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main

    store_path = tmp_path / "s.sqlite"
    with RunStore(store_path) as store:
        store.create_run("01JNOSOCKET000000000000000", "control", run_dir=tmp_path / "nowhere")
        store.mark_started("01JNOSOCKET000000000000000")
    assert main(["control", "01JNOSOCKET", "stop", "--store", str(store_path)]) == 3
    err = capsys.readouterr().err
    assert "no control socket at" in err and "control.sock" in err


def test_the_socket_is_removed_when_the_runner_fails(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def broken_supervise(self: RunLifecycle) -> None:
        seen.append((self.prepared.run_dir / SOCKET_NAME).exists())
        raise RuntimeError("the runner broke")

    monkeypatch.setattr(RunLifecycle, "supervise", broken_supervise)
    with pytest.raises(RuntimeError, match="the runner broke"):
        supervisor_module.run_worker("control", {}, store=tmp_path / "s.sqlite")
    run_dirs = list(runs_dir_for(tmp_path / "s.sqlite").iterdir())
    assert seen == [True] and len(run_dirs) == 1
    assert not (run_dirs[0] / SOCKET_NAME).exists()


# -- the console session of docs/guides/running.md ("Control a running run") --------------

PAGE = "docs/guides/running.md"
RUN_ID = "01JD3K7Q8ZB5R2N6XJ4WQ0CTRL"


def test_the_guide_session_runs_as_shown(tmp_path: Path) -> None:
    """The transcript on the page is what the example worker (the one the page runs) answers."""
    [block] = [b for b in blocks(PAGE) if b.language == "console" and "mosaic control" in b.code]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOSAIC_", "PYTEST_"))}
    config = tmp_path / "slow.json"
    config.write_text('{"episodes": 50, "step_delay_ms": 10}', encoding="utf-8")
    run = Run(env, tmp_path / "s.sqlite", "example", run_id=RUN_ID, config=config)
    try:
        for command, shown in steps(block.code):
            argv = shlex.split(command)
            assert argv[:2] == ["mosaic", "control"]
            out = subprocess.run(
                [sys.executable, "-m", "mosaic_sdk.cli", *argv[1:], "--store", str(run.store)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=60,
            )
            problem = compare(command, shown, out.stdout)
            assert problem is None, problem
        assert run.finish()["status"] == "cancelled"
    finally:
        run.kill()


# -- keys in the live view ----------------------------------------------------------------------


def test_keys_in_the_live_view_of_a_terminal(env: dict[str, str], tmp_path: Path) -> None:
    import pty

    store, rid = tmp_path / "s.sqlite", "01JKEYSTEST000000000000000"
    master, slave = pty.openpty()
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", "control", "--store", str(store)]
    argv += ["--run-id", rid, "--no-preflight"]
    proc = subprocess.Popen(
        argv, env={**env, "COLUMNS": "120"}, stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    seen = b""

    def read_until(marker: bytes, timeout: float = 30) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen:
            assert time.monotonic() < deadline, seen[-2000:]
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:  # the run ended and closed the terminal
                    break

    try:
        read_until(b"p pause/resume")  # the footer
        os.write(master, b"p")
        read_until(b"pause: ok")
        os.write(master, b"c")
        read_until(b"checkpoint: ok")
        os.write(master, b"s")
        assert proc.wait(30) == 130  # stopped: cancelled
        read_until(b"cancelled")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    with RunStore(store, readonly=True) as s:
        texts = [r["text"] for r in s.log_lines(rid, stream="stdout")]
        assert s.get_run(rid)["status"] == "cancelled"
    assert [json.loads(t)["cmd"] for t in texts if '"control_reply"' in t] == [
        "pause",
        "checkpoint",
        "stop",
    ]


def test_no_keys_when_stdin_is_a_pipe(env: dict[str, str], tmp_path: Path) -> None:
    run = Run(env, tmp_path / "s.sqlite", "control", "lines=50")
    assert run.proc.stdin is not None
    run.proc.stdin.write(b"pcs")  # keys typed into a pipe are not read
    run.proc.stdin.close()
    result = run.finish()
    assert result["status"] == "completed"
    with RunStore(run.store, readonly=True) as s:
        assert not [r for r in s.log_lines(run.run_id) if "control_reply" in r["text"]]
