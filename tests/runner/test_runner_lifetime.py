"""The worker dies with its runner, and a cancel ends what the worker started, setsid or not."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mosaic_sdk.runner.supervision.proctree import (
    Descendants,
    parent_death_preexec,
    pid_alive,
    pipe_holders,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="parent-death signal and /proc are Linux"
)


@pytest.fixture
def io_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(FIXTURES) + (os.pathsep + old if old else "")
    env["MOSAIC_PLUGINS"] = "iofixture=io_workers:IoFixture"
    return env


@pytest.fixture
def started_pids() -> Iterator[list[int]]:
    """Pids a test started (directly or through its worker); killed if still alive at the end."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _wait_for(predicate: Callable[[], object], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _event_payload(store: Path, name: str) -> dict[str, object] | None:
    try:
        conn = sqlite3.connect(store)
        try:
            row = conn.execute(
                "SELECT payload_json FROM events WHERE event = ?", (name,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return None
    return None if row is None else json.loads(row[0])


def _mosaic_run(env: dict[str, str], store: Path, mode: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", "iofixture", "--set", f"mode={mode}"]
    argv += ["--store", str(store), "--runs-dir", str(store.parent / "runs")]
    argv += ["--grace", "0.5", "--quiet"]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_sigkill_of_mosaic_run_takes_the_worker_with_it(
    io_env: dict[str, str], tmp_path: Path, started_pids: list[int]
) -> None:
    store = tmp_path / "s.sqlite"
    runner = _mosaic_run(io_env, store, "wait")
    started_pids.append(runner.pid)
    try:
        assert _wait_for(lambda: _event_payload(store, "ready") or runner.poll() is not None)
        assert runner.poll() is None, runner.communicate()
        payload = _event_payload(store, "ready")
        assert payload is not None
        worker = int(payload["pid"])  # type: ignore[call-overload]
        started_pids.append(worker)
        assert pid_alive(worker)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        runner.communicate()
    assert _wait_for(lambda: not pid_alive(worker), timeout=5), "the worker outlived its runner"


def test_cancel_ends_a_grandchild_that_left_the_group_with_setsid(
    io_env: dict[str, str], tmp_path: Path, started_pids: list[int]
) -> None:
    store = tmp_path / "s.sqlite"
    runner = _mosaic_run(io_env, store, "setsid_child")
    started_pids.append(runner.pid)
    try:
        assert _wait_for(lambda: _event_payload(store, "ready") or runner.poll() is not None)
        assert runner.poll() is None, runner.communicate()
        grandchild = int(_event_payload(store, "grandchild")["pid"])  # type: ignore[index]
        started_pids.append(grandchild)
        assert pid_alive(grandchild)
        assert os.getsid(grandchild) == grandchild  # its own session: killpg cannot reach it
        time.sleep(0.6)  # at least one walk of the worker's tree while it runs
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, err
    assert _wait_for(lambda: not pid_alive(grandchild), timeout=5), "the grandchild survived"


def test_a_double_forked_daemon_holding_the_output_is_ended_with_the_run(
    io_env: dict[str, str], tmp_path: Path, started_pids: list[int]
) -> None:
    """The daemon is in no process group and no tree walk of the worker (its parent exited at
    once), but it holds the worker's stdout and stderr: before, mosaic run waited 5 s for EOF
    and 5 s more for stderr, then left the daemon running."""
    store = tmp_path / "s.sqlite"
    runner = _mosaic_run(io_env, store, "daemon")
    started_pids.append(runner.pid)
    try:
        assert _wait_for(lambda: _event_payload(store, "ready") or runner.poll() is not None)
        assert runner.poll() is None, runner.communicate()
        daemon = int(_event_payload(store, "daemon")["pid"])  # type: ignore[index]
        started_pids.append(daemon)
        assert pid_alive(daemon) and os.getsid(daemon) != os.getsid(runner.pid)
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, err
    assert "keeps its stdout open" not in err, err
    assert _wait_for(lambda: not pid_alive(daemon), timeout=5), "the daemon outlived the run"


def test_descendants_remembers_a_setsid_grandchild_after_its_parent_died(
    started_pids: list[int],
) -> None:
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "print(p.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    started_pids.append(parent.pid)
    assert parent.stdout is not None
    grandchild = int(parent.stdout.readline())
    started_pids.append(grandchild)
    tree = Descendants(parent.pid)
    tree.walk(force=True)
    assert tree.alive() == [grandchild]
    parent.kill()
    parent.wait()
    parent.stdout.close()
    assert tree.signal(signal.SIGKILL) == 1  # reparented, but still remembered
    assert _wait_for(lambda: not pid_alive(grandchild), timeout=5)
    assert tree.alive() == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pipe_holders_are_the_writers_not_a_sibling_holding_our_reading_end(
    started_pids: list[int],
) -> None:
    # While one run ends, another may be forking its worker in another thread: until its
    # close_fds runs, that child holds a copy of every fd of ours, the first run's reading
    # end included. It is not the first run's process and must not be signalled with it.
    read_fd, write_fd = os.pipe()
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(subprocess.Popen(sleep, pass_fds=(read_fd,)))  # the sibling
        procs.append(subprocess.Popen(sleep, pass_fds=(write_fd,)))  # the worker's
        writer = procs[1]
        started_pids.extend(p.pid for p in procs)
        os.close(write_fd)
        write_fd = -1
        assert _wait_for(lambda: writer.pid in pipe_holders([read_fd]), timeout=5)
        assert pipe_holders([read_fd]) == [writer.pid]
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
        for proc in procs:
            proc.kill()
            proc.wait()


def test_parent_death_preexec_is_set_in_the_child() -> None:
    preexec = parent_death_preexec()
    assert preexec is not None
    # PR_GET_PDEATHSIG (2) from inside the child: the signal it gets when we die
    code = (
        "import ctypes, signal; libc = ctypes.CDLL(None); v = ctypes.c_int();"
        "libc.prctl(2, ctypes.byref(v), 0, 0, 0); print(v.value)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], preexec_fn=preexec, capture_output=True, text=True, check=True
    )
    assert int(out.stdout) == signal.SIGKILL
