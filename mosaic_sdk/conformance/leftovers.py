"""Finding what a run left behind: shared-memory segments and processes."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from mosaic_sdk.shm.processes import process_alive

SHM_DIR = Path("/dev/shm")


def shm_segments_of(run_id: str) -> list[str]:
    """Names of the shared-memory segments whose name contains ``run_id`` (Linux only)."""
    needles = {run_id, run_id.replace("/", "_")}
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return []
    return sorted(n for n in names if any(k in n for k in needles))


def remove_shm_segments(names: list[str]) -> None:
    """Unlink the named segments (exact names; missing ones are fine)."""
    for name in names:
        (SHM_DIR / name).unlink(missing_ok=True)


def processes_of(run_id: str) -> list[int]:
    """Pids of live processes whose environment has ``MOSAIC_RUN_ID=<run_id>`` (Linux only)."""
    if not sys.platform.startswith("linux"):
        return []
    marker = f"MOSAIC_RUN_ID={run_id}".encode()
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                variables = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rpartition(b")")[2].split()[:1]
        except OSError:
            continue
        if marker in variables and state != [b"Z"]:
            found.append(int(entry))
    return sorted(found)


def end_processes(pids: list[int], grace: float = 2.0) -> None:
    """SIGTERM the given pids, wait up to ``grace`` s, then SIGKILL the survivors."""
    _send(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [p for p in alive if process_alive(p)]
    _send(alive, signal.SIGKILL)


def _send(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
