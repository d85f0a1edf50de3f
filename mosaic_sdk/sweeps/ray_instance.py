"""The local Ray instance a ``ray`` sweep starts for itself: what belongs to it, how it ends,
and the watchdog that ends it when the driver cannot."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from mosaic_sdk.shm.processes import process_alive, process_start_ticks

#: The prefix of the temp dirs of the local instances sweeps start.
TEMP_PREFIX = "mosaic-ray-"
#: How long processes get between SIGTERM and SIGKILL when an instance is ended (s).
TERM_WAIT = 2.0
#: How often the watchdog notes the instance's processes while the driver lives (s).
WATCH_INTERVAL = 0.5


def _parents() -> dict[int, int]:
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            out[int(entry)] = int(fields[1])
    return out


def _mentions(pid: int, text: bytes) -> bool:
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    start = cmdline.find(text)
    while start >= 0:  # the directory itself, not one whose name merely starts the same
        after = cmdline[start + len(text) : start + len(text) + 1]
        if after in (b"", b"/", b"\0", b" ", b",", b"'", b'"'):
            return True
        start = cmdline.find(text, start + 1)
    return False


def instance_pids(temp_dir: str | Path, known: Iterable[int] = ()) -> list[int]:
    """The live processes of the instance kept in ``temp_dir``: those of this user whose
    command line names it, the ``known`` ones (found so by an earlier look), and their
    descendants (this process and its ancestors excepted)."""
    text = str(temp_dir).rstrip("/").encode()
    extra = set(known)
    parents = _parents()
    spared = set()
    pid = os.getpid()
    while pid > 1 and pid not in spared:
        spared.add(pid)
        pid = parents.get(pid, 1)
    roots = {p for p in parents if p not in spared and (p in extra or _mentions(p, text))}
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in found or p in spared:
            continue
        found.add(p)
        todo.extend(children.get(p, []))
    return sorted(found)


def remember(temp_dir: str | Path, known: dict[int, int]) -> list[int]:
    """Add the instance's processes to ``known`` (pid -> start time) and return those of
    ``known`` that still run (a pid whose process ended and was reused is not one of them)."""
    valid = [pid for pid, ticks in known.items() if process_alive(pid, ticks)]
    for pid in instance_pids(temp_dir, valid):
        ticks = process_start_ticks(pid)
        if ticks:  # 0: gone already
            known[pid] = ticks
    return sorted(pid for pid, ticks in known.items() if process_alive(pid, ticks))


def end_instance(
    temp_dir: str | Path, wait: float = TERM_WAIT, known: dict[int, int] | None = None
) -> int:
    """End every process of the instance in ``temp_dir`` (SIGTERM, SIGKILL after ``wait``);
    returns how many there were. A process found once (``known``, see :func:`remember`) is
    signalled until it is gone even when it no longer looks like the instance's: Ray's
    orphaned agents rename themselves and no longer descend from a process that names it."""
    known = {} if known is None else known
    ended: set[int] = set()
    for signum, pause in ((signal.SIGTERM, wait), (signal.SIGKILL, 0.2), (signal.SIGKILL, 0.5)):
        pids = remember(temp_dir, known)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
                ended.add(pid)
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline and remember(temp_dir, known):
            time.sleep(0.05)
    return len(ended)


def remove_temp_dir(temp_dir: str | Path) -> None:
    """Remove ``temp_dir`` unless a process of its instance still runs."""
    if not instance_pids(temp_dir):
        shutil.rmtree(temp_dir, ignore_errors=True)


def start_watchdog(temp_dir: str | Path, remove: bool) -> subprocess.Popen[bytes]:
    """Start the watchdog of the instance in ``temp_dir`` for this process (the driver)."""
    argv = [sys.executable, "-m", "mosaic_sdk.sweeps.ray_instance", str(os.getpid())]
    argv += [str(temp_dir), *(["--remove"] if remove else [])]
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def stop_watchdog(proc: subprocess.Popen[bytes]) -> None:
    """Stop a watchdog after a clean end (it leaves everything as it is)."""
    proc.terminate()  # a no-op once it has ended
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def watch(driver: int, temp_dir: str, remove: bool) -> int:
    """The watchdog's body: wait for ``driver`` to end, then end its instance."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fd = os.pidfd_open(driver)
    except ProcessLookupError:
        fd = None
    known: dict[int, int] = {}
    while fd is not None:
        remember(temp_dir, known)  # by pid: what the instance is, while it can still be told
        if select.select([fd], [], [], WATCH_INTERVAL)[0]:
            os.close(fd)
            fd = None
    end_instance(temp_dir, known=known)
    if remove:
        remove_temp_dir(temp_dir)
    return 0


if __name__ == "__main__":  # the watchdog (see the module docstring)
    args = sys.argv[1:]
    sys.exit(watch(int(args[0]), args[1], "--remove" in args[2:]))
