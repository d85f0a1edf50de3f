"""Starting ``mosaic watch`` and ``mosaic run`` for the end-to-end tests and the benchmark;
every process started here is ended by :func:`stop`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.watch.conftest import TOKEN


def start_watch(store: Path, *, host: str = "127.0.0.1") -> tuple[subprocess.Popen[str], str]:
    """``mosaic watch --port 0`` on ``store``; returns the process and the base URL it printed
    (without the token)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "watch", "--store", str(store), "--port", "0"]
        + ["--host", host, "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if "open http://" in line:
            url = line.split("open ", 1)[1].strip()
            return proc, url.split("/?token=")[0]
    stop(proc)
    raise AssertionError("mosaic watch did not print its URL:\n" + "".join(seen))


def start_run(store: Path, run_id: str, config: Path, log: Path) -> subprocess.Popen[bytes]:
    """``mosaic run example`` with FastLane on, its output into ``log``."""
    env = {k: v for k, v in os.environ.items() if "FASTLANE" not in k}
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mosaic_sdk.cli", "run", "example", "--config", str(config)]
            + ["--run-id", run_id, "--store", str(store)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


def stop(proc: subprocess.Popen, interrupt: bool = False) -> None:
    """End ``proc`` (SIGINT first when ``interrupt``: ``mosaic run`` then cancels its worker)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT if interrupt else signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
