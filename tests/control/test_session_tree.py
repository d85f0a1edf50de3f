"""A session from ``start_session`` is supervised as ``mosaic run`` supervises a run: ending it
(``close``, an exception in its ``with`` block, a worker that hangs on stop) ends the worker's
whole process tree, a child that left it with ``setsid()`` included, and calls its cleanup.

The worker is the conformance fixture ``fixture_setsid`` (tests/conformance/fixtures): it
starts a sleeper in a session of its own, its stdio on /dev/null, and never ends it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mosaic_sdk.runner import start_session
from mosaic_sdk.runner.supervision.proctree import pid_alive

FIXTURES = Path(__file__).resolve().parents[1] / "conformance" / "fixtures"


@pytest.fixture
def setsid_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Register the fixture worker ``setsid``; afterwards SIGKILL any sleeper it reported that
    still runs (by exact pid), so a failing test leaves nothing behind either."""
    pid_file = tmp_path / "fixture-pids"
    monkeypatch.syspath_prepend(str(FIXTURES))
    path = os.pathsep.join(p for p in (str(FIXTURES), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("MOSAIC_PLUGINS", "setsid=fixture_setsid:plugin")
    monkeypatch.setenv("FIXTURE_PID_FILE", str(pid_file))
    yield tmp_path / "runs"
    if pid_file.exists():
        for pid in map(int, pid_file.read_text().split()):
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def pids_of(session: object) -> tuple[int, int]:
    """The fixture's (worker, sleeper) pids, both running."""
    run_dir = getattr(session, "run_dir", None)
    assert run_dir is not None
    worker = int((Path(run_dir) / "worker.pid").read_text())
    sleeper = int((Path(run_dir) / "sleeper.pid").read_text())
    assert pid_alive(worker) and pid_alive(sleeper), "the fixture is not running"
    return worker, sleeper


def ends(pid: int, within: float = 15.0) -> bool:
    """True once ``pid`` has ended (waits up to ``within`` s: the end is not instant)."""
    deadline = time.monotonic() + within
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_close_ends_a_setsid_child_of_the_worker(setsid_worker: Path) -> None:
    session = start_session("setsid", {"seed": 1}, runs_dir=setsid_worker, fastlane=False)
    try:
        _, sleeper = pids_of(session)
        session.reset(seed=1)
        session.step()
        assert session.close().closed
        assert ends(sleeper), "the worker's setsid() child outlived the session"
        assert session.wait_exit(15) == 0
    finally:
        session.shutdown(timeout=2.0)


def test_an_exception_in_the_with_block_ends_the_tree(setsid_worker: Path) -> None:
    with pytest.raises(RuntimeError, match="the caller failed"):
        with start_session("setsid", runs_dir=setsid_worker, fastlane=False) as session:
            worker, sleeper = pids_of(session)
            session.reset(seed=2)
            raise RuntimeError("the caller failed")
    assert ends(sleeper), "the worker's setsid() child outlived the session"
    assert not pid_alive(worker)
    assert session.returncode == 0  # the interactive worker ended on its closed stdin


def test_a_worker_that_hangs_on_stop_is_killed_with_its_tree(setsid_worker: Path) -> None:
    """It ignores SIGTERM and never exits after close: SIGKILL after the stop timeout."""
    session = start_session("setsid", {"stubborn": True}, runs_dir=setsid_worker, fastlane=False)
    try:
        worker, sleeper = pids_of(session)
        session.reset(seed=3)
        assert session.close().closed
        code = session.shutdown(timeout=1.0)
    finally:
        session.kill()
    assert ends(sleeper), "the worker's setsid() child outlived the session"
    assert code == -signal.SIGKILL
    assert not pid_alive(worker)


def test_the_worker_stderr_and_cleanup_are_kept(setsid_worker: Path) -> None:
    """Its stderr goes to stderr.log in the run directory, as under mosaic run, and the
    cleanup ran without a problem."""
    with start_session("setsid", runs_dir=setsid_worker, fastlane=False) as session:
        session.send_line("not json")
        assert session.next_unmatched().error.code == "malformed_json"
    assert session.run_dir is not None and (session.run_dir / "stderr.log").is_file()
    assert session.link.problems == []  # type: ignore[attr-defined]


def test_a_worker_that_cannot_start_is_a_clear_error(
    setsid_worker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.runner.supervision.session_launch import SessionLaunchError

    monkeypatch.setenv("MOSAIC_PLUGINS", "setsid=fixture_setsid:plugin")
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    with pytest.raises(SessionLaunchError, match="cannot start the worker.*mosaic workers show"):
        start_session("setsid", runs_dir=setsid_worker, fastlane=False)
