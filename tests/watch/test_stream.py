"""The frame stream: JPEGs of the newest FastLane frame with their HUD, and a clear note for
no segment, a closed segment and a new frame size."""

from __future__ import annotations

import io
import json
import os
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image
from starlette.testclient import TestClient

from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneWriter
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink
from tests.watch.conftest import LOOPBACK_HOST


@pytest.fixture
def run_id() -> Iterator[str]:
    rid = f"watch-{os.getpid()}-{uuid.uuid4().hex[:10]}"
    try:
        yield rid
    finally:
        shm_unlink(segment_name(rid))


def frame_of(message: bytes) -> tuple[dict[str, Any], np.ndarray]:
    (length,) = struct.unpack(">I", message[:4])
    header = json.loads(message[4 : 4 + length])
    image = np.asarray(Image.open(io.BytesIO(message[4 + length :])))
    return header, image


def receive(ws: Any) -> dict[str, Any]:
    """The next message: {"bytes": ...} or {"text": ...}."""
    message = ws.receive()
    assert message["type"] == "websocket.send", message
    return message


def next_frame(ws: Any, notes: list[str] | None = None) -> tuple[dict[str, Any], np.ndarray]:
    while True:
        message = receive(ws)
        if message.get("bytes") is not None:
            ws.send_text("ack")
            return frame_of(message["bytes"])
        if notes is not None:
            notes.append(json.loads(message["text"])["message"])


def next_note(ws: Any) -> dict[str, Any]:
    while True:
        message = receive(ws)
        if message.get("text") is not None:
            return dict(json.loads(message["text"]))
        ws.send_text("ack")


def test_frames_arrive_as_jpeg_with_their_hud(client: TestClient, run_id: str) -> None:
    with FastLaneWriter.create(run_id, FastLaneConfig(width=64, height=48)) as writer:
        red = np.zeros((48, 64, 3), np.uint8)
        red[..., 0] = 250
        writer.publish(red, metrics=FastLaneMetrics(1.5, 20.25, 60.0))
        with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
            header, image = next_frame(ws)
            assert (header["width"], header["height"], header["seq"]) == (64, 48, 1)
            assert header["hud"] == {
                "last_reward": 1.5,
                "rolling_return": 20.25,
                "step_rate_hz": 60.0,
            }
            assert "20.25" in header["hud_text"] or "20.2" in header["hud_text"]
            assert image.shape == (48, 64, 3) and image[..., 0].mean() > 230
            blue = np.zeros((48, 64, 3), np.uint8)
            blue[..., 2] = 250
            writer.publish(blue)
            header, image = next_frame(ws)
            assert header["seq"] == 2 and image[..., 2].mean() > 230  # the frame changed


def test_no_segment_is_a_note_then_frames_once_it_publishes(
    client: TestClient, run_id: str
) -> None:
    with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
        note = next_note(ws)
        assert note["state"] == "waiting" and "no FastLane segment" in note["message"]
        with FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8, channels=1)) as w:
            w.publish(np.full((8, 8, 1), 200, np.uint8))
            header, image = next_frame(ws)
            assert header["channels"] == 1 and image.shape == (8, 8) and image.mean() > 190


def test_a_new_frame_size_is_streamed_and_said(client: TestClient, run_id: str) -> None:
    with FastLaneWriter.create(run_id, FastLaneConfig(width=32, height=32)) as writer:
        writer.publish(np.zeros((32, 32, 3), np.uint8))
        with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
            assert next_frame(ws)[0]["width"] == 32
            writer.publish(np.zeros((16, 40, 3), np.uint8))  # another shape: a new generation
            notes: list[str] = []
            header, image = next_frame(ws, notes)
            assert (header["width"], header["height"], header["generation"]) == (40, 16, 2)
            assert image.shape == (16, 40, 3)
            note = notes[-1] if notes else next_note(ws)["message"]
            assert "changed the frame size from 32x32 to 40x16" in note


def test_a_segment_that_goes_away_mid_stream_is_a_note(client: TestClient, run_id: str) -> None:
    writer = FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8))
    try:
        writer.publish(np.zeros((8, 8, 3), np.uint8))
        with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
            next_frame(ws)
            writer.unlink()
            writer.close()  # invalidated and unlinked: the run's frames are gone
            note = next_note(ws)
            assert note["state"] in ("gone", "waiting")
            assert "closed" in note["message"] or "no FastLane segment" in note["message"]
    finally:
        writer.unlink()
        writer.close()


def test_a_bad_run_id_is_a_note(client: TestClient) -> None:
    with client.websocket_connect("/ws/runs/" + "x" * 300 + "/frames", headers=LOOPBACK_HOST) as ws:
        note = next_note(ws)
        assert note["state"] == "waiting" and note["message"]


def test_an_unacknowledged_viewer_gets_two_frames_then_the_newest(
    client: TestClient, run_id: str
) -> None:
    with FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8)) as writer:
        writer.publish(np.zeros((8, 8, 3), np.uint8))
        with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
            first = frame_of(receive(ws)["bytes"])[0]["seq"]  # no ack sent
            writer.publish(np.ones((8, 8, 3), np.uint8))
            second = frame_of(receive(ws)["bytes"])[0]["seq"]
            assert (first, second) == (1, 2)
            for i in range(20):  # the viewer is out of credit: these are not queued for it
                writer.publish(np.full((8, 8, 3), i, np.uint8))
            ws.send_text("ack")
            header, _ = frame_of(receive(ws)["bytes"])
            assert header["seq"] == writer.head == 22  # the newest, not the third


def test_at_most_the_asked_rate_is_sent(client: TestClient, run_id: str) -> None:
    """The writer publishes before every read; the viewer acks at once: the server's cap (here
    ?fps=5) is what limits the frames, never the writer."""
    import time

    with FastLaneWriter.create(run_id, FastLaneConfig(width=8, height=8)) as writer:
        writer.publish(np.zeros((8, 8, 3), np.uint8))
        url = f"/ws/runs/{run_id}/frames?fps=5"
        with client.websocket_connect(url, headers=LOOPBACK_HOST) as ws:
            next_frame(ws)
            start, frames = time.monotonic(), 0
            while time.monotonic() - start < 1.0:
                writer.publish(np.zeros((8, 8, 3), np.uint8))
                next_frame(ws)
                frames += 1
            elapsed = time.monotonic() - start
    assert frames <= 5 * elapsed + 2  # one beat of slack at each end


def test_a_grid_frame_is_streamed_as_its_writer_tiled_it(client: TestClient, run_id: str) -> None:
    from mosaic_sdk.fastlane import tile_frames

    colors = [(250, 0, 0), (0, 250, 0), (0, 0, 250), (250, 250, 0)]
    tiles = [np.full((16, 16, 3), c, np.uint8) for c in colors]
    grid = tile_frames(tiles)  # what grid mode publishes: 2x2 envs in one frame
    with FastLaneWriter.create(run_id, FastLaneConfig(width=32, height=32)) as writer:
        writer.publish(grid)
        with client.websocket_connect(f"/ws/runs/{run_id}/frames", headers=LOOPBACK_HOST) as ws:
            header, image = next_frame(ws)
    assert (header["width"], header["height"]) == (32, 32)
    for (r, c), color in zip([(0, 0), (0, 1), (1, 0), (1, 1)], colors, strict=True):
        centre = image[r * 16 + 4 : r * 16 + 12, c * 16 + 4 : c * 16 + 12].reshape(-1, 3)
        assert np.abs(centre.mean(0) - color).max() < 12, (r, c)
