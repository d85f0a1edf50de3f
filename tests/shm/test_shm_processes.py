"""The SDK's one "is this pid alive?" (mosaic_sdk.shm.processes.process_alive), used by the
runner and the conformance suite too, and its answer when the process is another user's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mosaic_sdk.conformance import leftovers
from mosaic_sdk.runner.supervision import proctree
from mosaic_sdk.shm import processes

ANSWERS = {
    "shm.processes.process_alive": lambda: processes.process_alive,
    "runner.proctree.pid_alive": lambda: proctree.pid_alive,
    "conformance.leftovers.process_alive": lambda: leftovers.process_alive,
}


def test_every_layer_asks_the_same_function() -> None:
    assert {name: get() for name, get in ANSWERS.items()} == dict.fromkeys(
        ANSWERS, processes.process_alive
    )


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_a_process_we_may_not_signal_is_alive(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """kill(pid, 0) answering EPERM means the process exists (another user's): alive."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:

        def refused(pid: int, sig: int) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "kill", refused)
        assert ANSWERS[name]()(child.pid) is True
    finally:
        monkeypatch.undo()
        child.kill()
        child.wait()


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_a_gone_or_zombie_process_is_dead(name: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    alive = ANSWERS[name]()
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
    assert alive(child.pid) is False  # a zombie until reaped
    child.wait()
    assert alive(child.pid) is False
