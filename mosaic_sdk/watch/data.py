"""What ``mosaic watch`` reads from the store: runs, events, log lines and learning curves.

Every call opens the store read-only (:class:`~mosaic_sdk.runner.storage.store.RunStore` with
``readonly=True``), so the app never writes the file the runs are writing, and works on a
store it may only read. Values come back as the worker wrote them: escaping is the page's job
(it only ever sets ``textContent``).
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from mosaic_sdk.plots.curves import Curve, RunningCurve, skipped_text
from mosaic_sdk.plots.curves import smooth as trailing_mean
from mosaic_sdk.runner.control.control_relay import PROTOCOL as CONTROL_PROTOCOL
from mosaic_sdk.runner.control.control_socket import SOCKET_NAME
from mosaic_sdk.runner.storage.store import RunStore, StoreError, status_text

#: The most points of one curve the server sends (raw and smoothed each).
MAX_POINTS = 1000
#: The control socket's name in a run directory (the runner's :data:`SOCKET_NAME`).
CONTROL_SOCKET = SOCKET_NAME


class StoreMissingError(StoreError):
    """The store file does not exist (yet): no run has been started with it."""


def open_store(path: Path) -> RunStore:
    """The store opened read-only; :class:`StoreMissingError` when there is no file yet."""
    if not path.exists():
        raise StoreMissingError(
            f"no store at {path} yet: start a run with `mosaic run NAME --store {path}` "
            "(or pass the store your runs use: mosaic watch --store PATH)"
        )
    return RunStore(path, readonly=True)


def control_commands(run: dict[str, Any]) -> list[str]:
    """The buttons the run page offers: pause, resume and stop for a worker of the control
    protocol; only stop (the runner sends SIGTERM) for one that reads no commands."""
    if run.get("control_protocol") == CONTROL_PROTOCOL:
        return ["pause", "resume", "stop"]
    return ["stop"]


def control_available(run: dict[str, Any]) -> bool:
    """Whether the run's directory holds a control socket (the runner made one)."""
    run_dir = run.get("run_dir")
    if not run_dir or run["status"] != "running":
        return False
    try:
        return (Path(run_dir) / CONTROL_SOCKET).is_socket()
    except OSError:
        return False


def run_row(run: dict[str, Any]) -> dict[str, Any]:
    """One line of the runs page."""
    config = run.get("config") or {}
    env = config.get("env_id") if isinstance(config, dict) else None
    return {
        "run_id": run["run_id"],
        "worker": run["worker"],
        "status": status_text(run),  # the text `mosaic runs` shows
        "env_id": None if env is None else str(env),
        "steps": run["counts"]["steps"],
        "episodes": run["counts"]["episodes"],
        "last_return": run["last_episode_return"],
        "started_at": run["started_at"],
        "ended_at": run["ended_at"],
        "duration_seconds": run["duration_seconds"],
    }


def list_runs(path: Path, status: str | None = None, worker: str | None = None) -> dict[str, Any]:
    """Every run of the store (newest first), filtered, with the workers and statuses seen."""
    with open_store(path) as store:
        stored = store.list_runs(limit=None)
    runs = [run_row(r) for r in stored]
    workers = sorted({r["worker"] for r in runs})
    statuses = sorted({r["status"] for r in stored})  # "running" also finds runner-died runs
    if status:
        runs = [r for r in runs if r["status"] == status or r["status"].startswith(status + " ")]
    if worker:
        runs = [r for r in runs if r["worker"] == worker]
    return {"runs": runs, "workers": workers, "statuses": statuses}


def run_detail(path: Path, run_id: str) -> dict[str, Any]:
    """The run page's summary: the row, its counts and config, and what can be shown live."""
    with open_store(path) as store:
        run = store.get_run(run_id)
    out = run_row(run)
    out.update(
        counts=run["counts"],
        config=run["config"],
        exit_code=run["exit_code"],
        error=run["error"],
        run_dir=run["run_dir"],
        control=control_available(run),
        control_commands=control_commands(run),
        host=run["runner_host"],
        same_host=run["runner_host"] in (None, socket.gethostname()),
    )
    return out


def events_after(path: Path, run_id: str, after: int, limit: int = 500) -> list[dict[str, Any]]:
    """The run's lifecycle events with ``line_no > after`` (the last ``limit`` when ``after``
    is below 0: the page's first look at a long run)."""
    with open_store(path) as store:
        full = store.resolve(run_id)
        if after < 0:
            return list(store.events(full, limit=limit))
        return store.events_after(full, after, limit)


def logs_after(
    path: Path, run_id: str, after: dict[str, int], limit: int = 500
) -> list[dict[str, Any]]:
    """Log lines of both streams past the page's cursors (``after[stream]``; below 0: the
    last ``limit`` lines of that stream)."""
    out: list[dict[str, Any]] = []
    with open_store(path) as store:
        full = store.resolve(run_id)
        for stream in ("stdout", "stderr"):
            cursor = after.get(stream, -1)
            if cursor < 0:
                out.extend(store.log_lines(full, limit=limit, stream=stream))
                continue
            out.extend(store.log_lines_after(full, stream, cursor, limit))
    return out


class CurveCache:
    """Learning curves of runs, one :class:`~mosaic_sdk.plots.curves.RunningCurve` each (the
    curve module of ``mosaic runs plot``, read incrementally): each request reads only the
    episodes stored since the previous one (a 10k-episode run is read once)."""

    def __init__(self, store_path: Path) -> None:
        self.store_path = store_path
        self._curves: dict[str, RunningCurve] = {}
        self._lock = threading.Lock()

    def _update(self, store: RunStore, run_id: str) -> tuple[Curve, int]:
        started_at = float(store.get_run(run_id)["started_at"])
        with self._lock:
            running = self._curves.get(run_id)
            if running is None or running.started_at != started_at:  # new, or a new run
                running = self._curves[run_id] = RunningCurve(run_id, started_at)
            running.update(store)
            return running.curve(), running.read

    def curve(
        self, run_id: str, *, smooth: int = 20, points: int = MAX_POINTS, known: int = -1
    ) -> dict[str, Any]:
        """The run's curve, raw and smoothed (mean of the last ``smooth`` episodes), at most
        ``points`` points each; ``episodes``: the points, ``read``: the episodes read (the
        points and the skipped ones: ``skipped`` by reason, ``skipped_text`` in words).
        ``known``: the ``read`` the page already has; when no episode came since, only
        ``{"episodes", "read", "unchanged": true}`` is returned."""
        started = time.perf_counter()
        with open_store(self.store_path) as store:
            full = store.resolve(run_id)
            curve, read = self._update(store, full)
        n = len(curve)
        if read == known:
            return {"run_id": full, "episodes": n, "read": read, "unchanged": True}
        smooth = max(1, min(int(smooth), 10_000))
        keep = downsample_indices(curve.y, max(2, min(points, MAX_POINTS)))
        return {
            "run_id": full,
            "episodes": n,
            "read": read,
            "unchanged": False,
            "smooth": smooth,
            "raw": _pairs(curve.x[keep], curve.y[keep]),
            "smoothed": _pairs(curve.x[keep], curve.smoothed(smooth)[keep]),
            "skipped": dict(curve.skipped),
            "skipped_text": skipped_text(curve.skipped),
            "build_ms": round((time.perf_counter() - started) * 1000, 2),
        }


def _pairs(x: np.ndarray, y: np.ndarray) -> list[list[float]]:
    return [[float(a), float(b)] for a, b in zip(x.tolist(), y.tolist(), strict=True)]


#: Mean of the last ``window`` values at each index: the curve module's trailing average.
rolling_mean = trailing_mean


def downsample_indices(y: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most ``points`` values that keep the shape: the first and last, and the
    lowest and highest value of each of ``points // 2`` equal buckets, in order."""
    n = y.size
    if n <= points:
        return np.arange(n)
    buckets = max(1, points // 2 - 1)
    edges = np.linspace(1, n - 1, buckets + 1).astype(np.int64)
    keep = [0, n - 1]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi <= lo:
            continue
        part = y[lo:hi]
        keep.append(lo + int(np.argmin(part)))
        keep.append(lo + int(np.argmax(part)))
    return np.unique(np.asarray(keep, dtype=np.int64))


__all__ = [
    "CONTROL_SOCKET",
    "MAX_POINTS",
    "CurveCache",
    "StoreMissingError",
    "control_available",
    "control_commands",
    "downsample_indices",
    "events_after",
    "list_runs",
    "logs_after",
    "open_store",
    "rolling_mean",
    "run_detail",
    "run_row",
]
