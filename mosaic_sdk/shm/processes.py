"""The SDK's one answer to "is this pid alive?" (Linux /proc aware): :func:`process_alive`.

A zombie counts as dead, and with ``start_ticks`` so does a pid reused by a younger process; a
process we may not signal (another user's) exists, so it counts as alive.
"""

from __future__ import annotations

import os
import sys

_PROC = "/proc"


def _stat_fields(pid: int) -> list[bytes] | None:
    """Fields of /proc/PID/stat after the command name, or None when unreadable."""
    with open(f"{_PROC}/{pid}/stat", "rb") as fh:
        stat = fh.read()
    return stat[stat.rfind(b")") + 2 :].split()


def process_start_ticks(pid: int) -> int:
    """Start time of ``pid`` in clock ticks since boot (Linux), 0 when unknown."""
    try:
        fields = _stat_fields(pid)
        return int(fields[19]) if fields else 0
    except (OSError, IndexError, ValueError):
        return 0


def process_alive(pid: int, start_ticks: int = 0) -> bool:
    """Whether ``pid`` is a running (non-zombie) process, and the same one when ticks given."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if sys.platform.startswith("linux"):
        try:
            fields = _stat_fields(pid)
        except FileNotFoundError:
            return False
        except OSError:  # pragma: no cover
            return True
        if fields and fields[0] in (b"Z", b"X"):
            return False
        if start_ticks and fields and len(fields) > 19 and int(fields[19]) != start_ticks:
            return False
    return True


def cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
