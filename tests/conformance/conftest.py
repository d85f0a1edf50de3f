"""Fixtures of the conformance tests: fixture workers registered through MOSAIC_PLUGINS."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mosaic_sdk.conformance.leftovers import SHM_DIR, process_alive

FIXTURES_DIR = Path(__file__).parent / "fixtures"


@pytest.fixture
def use_workers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Register fixture workers: ``use_workers("good=fixture_good:plugin")``.

    Puts the fixtures on sys.path and PYTHONPATH (inherited by launched workers), gives the
    stop checks a 2 s timeout, and afterwards makes sure that no process a fixture reported
    (``$FIXTURE_PID_FILE``) and no segment of its runs is left, ending/removing them by
    exact pid/name.
    """
    pid_file = tmp_path / "fixture-pids"
    before = set(os.listdir(SHM_DIR)) if SHM_DIR.is_dir() else set()

    names: list[str] = []

    def use(spec: str) -> Path:
        names.extend(item.partition("=")[0].strip() for item in spec.split(",") if item.strip())
        monkeypatch.syspath_prepend(str(FIXTURES_DIR))
        path = os.pathsep.join(p for p in (str(FIXTURES_DIR), os.environ.get("PYTHONPATH")) if p)
        monkeypatch.setenv("PYTHONPATH", path)
        monkeypatch.setenv("MOSAIC_PLUGINS", spec)
        monkeypatch.setenv("MOSAIC_CONFORMANCE_STOP_TIMEOUT", "2")
        monkeypatch.setenv("FIXTURE_PID_FILE", str(pid_file))
        return pid_file

    yield use

    leaked_pids = []
    if pid_file.exists():
        for pid in map(int, pid_file.read_text().split()):
            if process_alive(pid):
                leaked_pids.append(pid)
                os.kill(pid, signal.SIGKILL)
    after = set(os.listdir(SHM_DIR)) if SHM_DIR.is_dir() else set()
    # The suite's run ids are "conformance-<worker>-<kind>-<hex>": only the fixture workers
    # of this test are ours (other suites may run on the same machine at the same time).
    mine = tuple(f"conformance-{name}-" for name in names)
    leaked_shm = sorted(n for n in after - before if mine and any(m in n for m in mine))
    for name in leaked_shm:
        (SHM_DIR / name).unlink(missing_ok=True)
    assert not leaked_pids, f"the suite left fixture processes running: {leaked_pids}"
    assert not leaked_shm, f"the suite left fixture segments: {leaked_shm}"
