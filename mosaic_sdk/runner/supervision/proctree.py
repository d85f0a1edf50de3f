"""The worker's process tree: the worker dies with its runner, and nothing it starts outlives
the run, even a process that left the worker's process group with ``setsid()``."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from stat import S_ISFIFO

from mosaic_sdk.shm.processes import process_alive as pid_alive

#: How often (seconds) the supervisor walks the worker's tree while it runs.
WALK_INTERVAL = 0.5

_PR_SET_PDEATHSIG = 1


def parent_death_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies (Linux
    ``prctl(PR_SET_PDEATHSIG)``; with its runner gone nobody would read the worker's output).
    Other platforms: None (the worker can outlive a SIGKILLed runner)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()
    sigkill = int(signal.SIGKILL)

    def preexec() -> None:  # runs in the child between fork and exec: keep it tiny
        prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0)
        if os.getppid() != parent:  # the runner died before the request was made
            os.kill(os.getpid(), sigkill)

    return preexec


def _stat(pid: int) -> tuple[int, int, str] | None:
    """``(ppid, start_time, state)`` of ``pid`` from /proc, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()  # the name may hold spaces and parentheses
    try:
        return int(fields[1]), int(fields[19]), fields[0].decode("ascii", "replace")
    except (IndexError, ValueError):
        return None


def _below(tops: list[int], children: Callable[[int], list[int] | None]) -> list[int] | None:
    """Every process below ``tops``; None when ``children`` returns None."""
    seen: set[int] = set()
    todo = list(tops)
    while todo:
        kids = children(todo.pop())
        if kids is None:
            return None
        fresh = set(kids) - seen
        seen |= fresh
        todo += fresh
    return list(seen)


def _children_files(pid: int) -> list[int] | None:
    """Children of ``pid`` from /proc/PID/task/TID/children, or None if the kernel lacks it."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(x) for x in f.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended
            return None  # no children files on this kernel
        except OSError:
            continue
    return out


class Descendants:
    """The processes below one pid, found by walking ``/proc`` and remembered by pid and start
    time, so that a ``setsid()`` grandchild, which escapes ``killpg``, is signalled too. Not a
    subreaper (that would change the whole runner process, which may live inside another
    program): a process reparented between two walks is never seen."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.enabled = os.path.isdir("/proc/self/task")
        self.known: dict[int, int] = {}  # pid -> start time
        self._use_children_files = True
        self._next_walk = 0.0

    def walk(self, force: bool = False) -> None:
        """Remember every process now below the root (at most every WALK_INTERVAL s)."""
        now = time.monotonic()
        if not self.enabled or (not force and now < self._next_walk):
            return
        self._next_walk = now + WALK_INTERVAL
        tops = [self.root, *self.known]
        found = _below(tops, _children_files) if self._use_children_files else None
        if found is None:
            self._use_children_files = False
            children: dict[int, list[int]] = {}
            for name in os.listdir("/proc"):
                stat = _stat(int(name)) if name.isdigit() else None
                if stat is not None:
                    children.setdefault(stat[0], []).append(int(name))
            found = _below(tops, lambda pid: children.get(pid, [])) or []
        self.adopt(found)

    def alive(self) -> list[int]:
        """The remembered processes that still run (same pid and start time, not a zombie)."""
        out = []
        for pid, started in list(self.known.items()):
            stat = _stat(pid)
            if stat is None or stat[1] != started or stat[2] in ("Z", "X"):
                del self.known[pid]
            else:
                out.append(pid)
        return out

    def adopt(self, pids: list[int]) -> None:
        """Remember ``pids`` as the run's too (found by a walk, or :func:`pipe_holders`)."""
        for pid in pids:
            if pid != self.root and pid not in self.known:
                stat = _stat(pid)
                if stat is not None:
                    self.known[pid] = stat[1]

    def signal(self, signum: int) -> int:
        """Send ``signum`` to every remembered process still alive; returns how many."""
        sent = 0
        for pid in self.alive():
            try:
                os.kill(pid, signum)
                sent += 1
            except (ProcessLookupError, PermissionError):
                pass
        return sent


def pipe_holders(fds: list[int]) -> list[int]:
    """The other processes that hold for writing a pipe whose reading end this process holds
    as ``fds`` (the worker's output): a daemon that double-forked is in no tree walk and no
    process group, but still holds it (Linux ``/proc``; elsewhere an empty list)."""
    wanted = set()
    for fd in fds:
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if S_ISFIFO(st.st_mode):
            wanted.add(f"pipe:[{st.st_ino}]")
    if not wanted or not os.path.isdir("/proc/self/fd"):
        return []
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            entries = os.listdir(f"/proc/{name}/fd")
        except OSError:  # gone, or not ours to look at
            continue
        for entry in entries:
            try:
                if os.readlink(f"/proc/{name}/fd/{entry}") in wanted and _writes(name, entry):
                    found.append(int(name))
                    break
            except OSError:
                continue
    return found


def _writes(pid: str, fd: str) -> bool:
    """Whether ``pid`` has ``fd`` open for writing (``/proc/PID/fdinfo`` flags; True when
    unreadable). A reader is a copy of our own end: a child we are forking in another thread
    holds our fds until ``close_fds`` runs in it, and must not be signalled."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY
    except (OSError, ValueError, IndexError):
        pass
    return True


__all__ = ["WALK_INTERVAL", "Descendants", "parent_death_preexec", "pid_alive", "pipe_holders"]
