"""Running the CleanRL worker as the runner does (one child process) and watching it.

:func:`run_worker` writes the config into a fresh run directory, starts
``python -m mosaic_worker_cleanrl --config ...`` with stdout piped, optionally watches the run's
FastLane ring from this process (:class:`FrameWatcher`), and returns everything the worker
wrote, classified.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.telemetry.reader import classify_line

needs_upstream = pytest.mark.skipif(
    importlib.util.find_spec("stable_baselines3") is None
    or importlib.util.find_spec("torch") is None
    or importlib.util.find_spec("cleanrl") is None,
    reason="upstream CleanRL tests need torch, stable-baselines3 and cleanrl (see scripts/test)",
)


def unique_run_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class FrameWatcher(threading.Thread):
    """Polls a run's FastLane ring and records the (width, height) of frames it reads."""

    def __init__(self, run_id: str) -> None:
        super().__init__(daemon=True)
        self.run_id = run_id
        self.frames = 0
        self.sizes: set[tuple[int, int]] = set()
        self._stop_event = threading.Event()

    def run(self) -> None:
        from mosaic_sdk.fastlane import FastLaneError, FastLaneReader

        reader = None
        last: tuple[int, int, int] | None = None
        while not self._stop_event.is_set():
            try:
                if reader is None:
                    reader = FastLaneReader.attach(self.run_id)
                frame = reader.latest_frame()
            except (FastLaneError, OSError, ValueError):
                frame = None
                if reader is not None:
                    reader.close()
                reader = None
            if frame is not None:
                key = (frame.generation, frame.seq, frame.width)
                if key != last:
                    last = key
                    self.frames += 1
                    self.sizes.add((frame.width, frame.height))
            time.sleep(0.003)
        if reader is not None:
            reader.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


@dataclass
class WorkerResult:
    returncode: int
    lines: list[Any]
    stderr: str
    run_dir: Path
    frames: int = 0
    frame_sizes: set[tuple[int, int]] = field(default_factory=set)

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        found = [ln.data for ln in self.lines if ln.kind == "lifecycle"]
        return [e for e in found if name is None or e["event"] == name]

    def episodes(self) -> list[dict[str, Any]]:
        return [ln.data for ln in self.lines if ln.kind == "episode"]

    def steps(self) -> list[dict[str, Any]]:
        return [ln.data for ln in self.lines if ln.kind == "step"]

    def terminal(self) -> str:
        names = [e["event"] for e in self.events()]
        ends = [n for n in names if n in ("run_completed", "run_failed", "run_cancelled")]
        assert len(ends) == 1, f"expected one terminal event, got {ends}\n{self.stderr[-3000:]}"
        return ends[0]

    def why(self) -> str:
        """What went wrong, for assertion messages: run_failed's payload and stderr's tail."""
        failed = [e["payload"] for e in self.events("run_failed")]
        tail = "\n".join(line for line in self.stderr.splitlines() if "XDG_RUNTIME_DIR" not in line)
        return f"run_failed: {failed}\nstderr: {tail[-3000:]}"

    def analytics(self) -> dict[str, Any]:
        """The run's manifest, checked by the SDK's reader (it refuses any other shape)."""
        from mosaic_sdk.analytics import read_analytics

        return read_analytics(self.run_dir).to_dict()

    def log(self) -> str:
        path = self.run_dir / "algorithm.log"
        return path.read_text() if path.exists() else ""


def run_worker(
    base: Path,
    config: dict[str, Any],
    *,
    timeout: float = 300,
    watch_frames: bool = False,
    extra_env: dict[str, str] | None = None,
    on_line: Callable[[Any, subprocess.Popen[bytes]], None] | None = None,
    hide_modules: tuple[str, ...] = (),
) -> WorkerResult:
    """Run the worker on ``config``; ``hide_modules``: top-level modules the worker process
    cannot import (as on a Python without them), even when this one has them."""
    run_dir = base / config["run_id"]
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "config.json"
    path.write_text(json.dumps(config))
    env = dict(os.environ)
    env.update({"MOSAIC_RUN_DIR": str(run_dir), "MOSAIC_RUN_ID": config["run_id"]})
    env.update(extra_env or {})
    watcher = FrameWatcher(config["run_id"]) if watch_frames else None
    if watcher is not None:
        watcher.start()
    command = [sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(path)]
    if hide_modules:
        hide = "".join(f"sys.modules[{m!r}] = None; " for m in hide_modules)
        start = "import runpy, sys; " + hide + "runpy.run_module('mosaic_worker_cleanrl', "
        command[1:3] = ["-c", start + "run_name='__main__', alter_sys=True)"]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    stderr_chunks: list[bytes] = []
    drain = threading.Thread(
        target=lambda: stderr_chunks.append(proc.stderr.read() if proc.stderr else b""),
        daemon=True,
    )
    drain.start()
    lines = []
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = classify_line(raw)
            lines.append(line)
            if on_line is not None:
                on_line(line, proc)
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker run {config['run_id']} exceeded {timeout} s")
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        if watcher is not None:
            watcher.stop()
        from mosaic_sdk.fastlane import cleanup_stale_segment

        cleanup_stale_segment(config["run_id"])
    drain.join(timeout=10)
    return WorkerResult(
        code,
        lines,
        b"".join(stderr_chunks).decode("utf-8", "replace"),
        run_dir,
        watcher.frames if watcher else 0,
        watcher.sizes if watcher else set(),
    )
