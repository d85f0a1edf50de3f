"""A worker that only writes ``render_payload`` in its step lines (the platform's way): under
``mosaic run`` its frames reach mosaic watch's frame stream."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.runner.supervisor import run_worker
from mosaic_sdk.watch.app import create_app
from tests.watch.conftest import LOOPBACK_HOST, TOKEN
from tests.watch.test_stream import next_frame

FIXTURES = Path(__file__).resolve().parents[1] / "runner" / "fixtures"


def test_render_payload_frames_reach_the_watch_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES) + (os.pathsep + old if old else ""))
    monkeypatch.setenv("MOSAIC_PLUGINS", "framefixture=frame_workers:FrameFixture")
    store = tmp_path / "runs.sqlite"
    run_id = f"watch-steps-{uuid.uuid4().hex[:8]}"
    release = tmp_path / "release"
    config = {"mode": "frames", "count": 30, "width": 16, "height": 8, "release": str(release)}
    result = {}
    thread = threading.Thread(
        target=lambda: result.setdefault(
            "run", run_worker("framefixture", config, run_id=run_id, store=store)
        )
    )
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not store.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        app = create_app(store, token=TOKEN)
        with TestClient(app, base_url="http://127.0.0.1:8766") as client:
            with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
                header, image = next_frame(ws)
                while header["hud"]["last_reward"] != 29.0:  # the last step's frame
                    header, image = next_frame(ws)
        assert (header["width"], header["height"]) == (16, 8)
        assert abs(float(image.mean()) - 29) <= 3  # every pixel holds the step index (JPEG)
    finally:
        release.touch()
        thread.join(60)
    assert result["run"].status == "completed"
    assert not (Path("/dev/shm") / segment_name(run_id)).exists()
