"""``mosaic fastlane snapshot`` and ``mosaic fastlane stat``."""

from __future__ import annotations

import argparse
import json
import struct
import zlib

import numpy as np
import pytest

from mosaic_sdk.cli import UsageError
from mosaic_sdk.cli import fastlane as fastlane_cli
from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneWriter


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mosaic")
    fastlane_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["fastlane", *argv])
    return args.handler(args)


def decode_png(data: bytes) -> tuple[np.ndarray, dict[str, str]]:
    """A minimal PNG decoder for what encode_png writes (8-bit, filter 0)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, text = 8, b"", {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        if kind == b"IHDR":
            w, h, depth, color, *_ = struct.unpack(">IIBBBBB", body)
        elif kind == b"tEXt":
            key, value = body.split(b"\x00", 1)
            text[key.decode()] = value.decode("latin-1")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    c = {0: 1, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, c), text


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_snapshot_writes_the_frame_and_its_hud(run_id, tmp_path, channels, capsys):
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (90, 120, channels), dtype=np.uint8)
    config = FastLaneConfig(width=120, height=90, channels=channels)
    with FastLaneWriter.create(run_id, config) as writer:
        writer.publish(frame, metrics=FastLaneMetrics(1.25, -3.5, 59.9))
        out = tmp_path / "snap.png"
        assert run_cli("snapshot", run_id, str(out)) == 0
    image, text = decode_png(out.read_bytes())
    assert image.shape[2] == channels
    np.testing.assert_array_equal(image[:90, :120], frame)  # pixels untouched
    strip = image[90:]
    assert strip.shape[0] > 0 and strip[..., 0].max() == 255  # HUD text drawn
    assert float(text["last_reward"]) == 1.25 and float(text["rolling_return"]) == -3.5
    assert text["hud"] == "reward: 1.25\nreturn: -3.50\nstep/sec: 59.9"
    assert "frame 1" in capsys.readouterr().out


def test_snapshot_errors_are_one_line(run_id, tmp_path):
    with pytest.raises(UsageError, match="no FastLane segment"):
        run_cli("snapshot", run_id, str(tmp_path / "x.png"))
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)):
        with pytest.raises(UsageError, match="not published a frame"):
            run_cli("snapshot", run_id, str(tmp_path / "x.png"), "--timeout", "0")
        with pytest.raises(UsageError, match=r"\.png"):
            run_cli("snapshot", run_id, str(tmp_path / "x.jpg"))


def test_stat_reports_shape_owner_and_rate(run_id, capsys):
    import os
    import threading

    with FastLaneWriter.create(run_id, FastLaneConfig(width=16, height=8)) as writer:
        stop = threading.Event()

        def publish() -> None:
            frame = np.zeros((8, 16, 3), np.uint8)
            while not stop.is_set():
                writer.publish(frame)
                stop.wait(0.005)

        thread = threading.Thread(target=publish)
        thread.start()
        try:
            assert run_cli("stat", run_id, "--json", "--interval", "0.3") == 0
        finally:
            stop.set()
            thread.join()
        info = json.loads(capsys.readouterr().out)
        assert (info["width"], info["height"], info["channels"]) == (16, 8, 3)
        assert info["writer_pid"] == os.getpid() and info["writer_alive"] is True
        assert info["generation"] == 1 and info["frames_published"] > 0
        assert info["frame_rate_hz"] > 0
        assert run_cli("stat", run_id, "--interval", "0") == 0
        text = capsys.readouterr().out
        assert "16x8x3" in text and "alive" in text


def test_mosaic_main_dispatches_fastlane_and_reports_errors_in_one_line(run_id, capsys):
    from mosaic_sdk.cli import main

    assert main(["fastlane", "stat", run_id]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mosaic: error: no FastLane segment") and "\n" not in err
    with FastLaneWriter.create(run_id, FastLaneConfig(width=3, height=2)) as writer:
        writer.publish(np.zeros((2, 3, 3), np.uint8))
        assert main(["fastlane", "stat", run_id, "--json", "--interval", "0"]) == 0
        assert json.loads(capsys.readouterr().out)["frames_published"] == 1
