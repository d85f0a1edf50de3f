"""The example worker publishes rendered frames to FastLane when asked, and cleans up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mosaic_sdk.fastlane import FastLaneReader, FastLaneUnavailableError, create_fastlane_name


def segment_path(run_id: str) -> Path:
    return Path("/dev/shm") / create_fastlane_name(run_id)


@pytest.mark.parametrize("switch", ["config", "MOSAIC_FASTLANE_ONLY", "GYM_GUI_FASTLANE_ONLY"])
def test_example_worker_streams_frames_then_removes_its_segment(
    tmp_path: Path, switch: str
) -> None:
    run_id = f"fl-{uuid.uuid4().hex[:8]}"
    cfg = {"run_id": run_id, "episodes": 3, "step_delay_ms": 5, "max_steps_per_episode": 60}
    env = {**os.environ, "MOSAIC_RUN_DIR": str(tmp_path), "MOSAIC_RUN_ID": run_id}
    if switch == "config":
        cfg["fastlane"] = True
    else:
        env[switch] = "1"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    frame = None
    try:
        deadline = time.monotonic() + 30
        while frame is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                reader = FastLaneReader.attach(run_id)
            except FastLaneUnavailableError:
                time.sleep(0.02)
                continue
            try:
                for _ in range(200):
                    frame = reader.latest_frame()
                    if frame is not None:
                        break
                    time.sleep(0.01)
            finally:
                reader.close()
        assert frame is not None, "no frame arrived"
        assert (frame.width, frame.height, frame.channels) == (600, 400, 3)  # CartPole render
        assert len(frame.data) == 600 * 400 * 3 and any(frame.data)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # the worker's own close() unlinks; remove ours by exact name if a failure left it
        if segment_path(run_id).exists():
            os.unlink(segment_path(run_id))
            pytest.fail("the worker left its FastLane segment behind")


def test_fastlane_off_by_default_creates_no_segment(tmp_path: Path) -> None:
    run_id = f"nofl-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": run_id, "episodes": 1}))
    env = {k: v for k, v in os.environ.items() if "FASTLANE" not in k}
    subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(path)],
        check=True,
        capture_output=True,
        env={**env, "MOSAIC_RUN_DIR": str(tmp_path)},
    )
    assert not segment_path(run_id).exists()
