"""The conformance suite run from the SDK's own checkout: the checkout's ``tests/conftest.py``
is loaded then too, and must take items that are not under ``tests/`` (issue 30)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_collects_from_the_sdk_checkout() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "mosaic_sdk.conformance",
            "--mosaic-worker",
            "example",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert "INTERNALERROR" not in out, out[-3000:]
    assert done.returncode == 0, out[-3000:]
    assert "test_worker_conformance.py::" in out
