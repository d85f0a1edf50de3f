"""Writer and reader in separate processes: never a torn frame, never another frame's metrics.

Short versions (about a second each); benchmarks/fastlane/stress.py runs the long ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = str(Path(__file__).with_name("fastlane_child.py"))


def run_pair(run_id: str, writer_args: list[str], reader_args: list[str], impl: str) -> dict:
    env = dict(os.environ, MOSAIC_ATOMICS=impl)
    cmd = [sys.executable, CHILD]
    writer = subprocess.Popen(
        cmd + ["writer", run_id, *writer_args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert writer.stdout.readline().strip() == "READY", writer.stderr.read()
        reader = subprocess.run(
            cmd + ["reader", run_id, *reader_args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert reader.returncode == 0, reader.stderr
        w_out, w_err = writer.communicate(timeout=120)
        assert writer.returncode == 0, w_err
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    stats = json.loads(reader.stdout.strip().splitlines()[-1])
    stats["published"] = json.loads(w_out.strip().splitlines()[-1])["published"]
    return stats


@pytest.mark.parametrize("impl", ["native", "python"])
def test_flat_out_small_frames(run_id, impl):
    stats = run_pair(run_id, ["84", "84", "3", "60", "0"], ["1.0", "0"], impl)
    assert stats["torn"] == 0 and stats["mismatched"] == 0
    assert stats["reads"] > 0 and stats["distinct"] > 1


def test_large_frames_at_60fps_read_at_60hz(run_id):
    stats = run_pair(run_id, ["1920", "1080", "3", "60", "60"], ["1.0", "60"], "native")
    assert stats["torn"] == 0 and stats["mismatched"] == 0
    assert stats["reads"] > 0
