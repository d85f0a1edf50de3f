"""``mosaic fastlane snapshot`` and ``mosaic fastlane stat``."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pytest
from PIL import Image

from mosaic_sdk.cli import UsageError
from mosaic_sdk.cli import fastlane as fastlane_cli
from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneWriter


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mosaic")
    fastlane_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["fastlane", *argv])
    return args.handler(args)


def read_picture(path) -> tuple[np.ndarray, dict[str, str], Image.Image]:
    """Pixels (HxWxC), text entries and the image, as Pillow reads them back."""
    with Image.open(path) as image:
        image.load()
    pixels = np.asarray(image)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return pixels, dict(getattr(image, "text", {})), image


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_snapshot_writes_the_frame_and_its_hud(run_id, tmp_path, channels, capsys):
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (90, 120, channels), dtype=np.uint8)
    config = FastLaneConfig(width=120, height=90, channels=channels)
    with FastLaneWriter.create(run_id, config) as writer:
        writer.publish(frame, metrics=FastLaneMetrics(1.25, -3.5, 59.9))
        out = tmp_path / "snap.png"
        assert run_cli("snapshot", run_id, str(out)) == 0
    image, text, picture = read_picture(out)
    assert picture.format == "PNG" and picture.mode == {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    assert image.shape[2] == channels
    np.testing.assert_array_equal(image[:90, :120], frame)  # pixels untouched
    strip = image[90:]
    assert strip.shape[0] > 0 and strip[..., 0].max() > 200  # HUD text drawn, white on black
    assert (strip[..., 0] == 0).mean() > 0.5
    if channels == 4:
        assert (strip[..., 3] == 255).all()  # the strip is opaque
    assert float(text["last_reward"]) == 1.25 and float(text["rolling_return"]) == -3.5
    assert text["hud"] == "reward: 1.25\nreturn: -3.50\nstep/sec: 59.9"
    assert "frame 1" in capsys.readouterr().out


def test_snapshot_errors_are_one_line(run_id, tmp_path):
    with pytest.raises(UsageError, match="no FastLane segment"):
        run_cli("snapshot", run_id, str(tmp_path / "x.png"))
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)) as writer:
        with pytest.raises(UsageError, match="not published a frame"):
            run_cli("snapshot", run_id, str(tmp_path / "x.png"), "--timeout", "0")
        with pytest.raises(UsageError, match=r"name it \.png or \.jpg"):
            run_cli("snapshot", run_id, str(tmp_path / "x.gif"))
        writer.publish(np.zeros((2, 2, 3), np.uint8))
        with pytest.raises(UsageError, match="cannot write"):
            run_cli("snapshot", run_id, str(tmp_path / "no-such-dir" / "x.png"))
    assert not list(tmp_path.iterdir())


def test_snapshot_writes_a_jpeg_by_its_suffix(run_id, tmp_path):
    yy, xx = np.mgrid[0:64, 0:96]
    frame = np.stack([xx * 2, yy * 3, np.full_like(xx, 128)], axis=-1).astype(np.uint8)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=96, height=64, channels=4)) as w:
        opaque = np.dstack([frame, np.full((64, 96), 255, np.uint8)])
        w.publish(opaque, metrics=FastLaneMetrics(2.0))
        out = tmp_path / "snap.JPEG"
        assert run_cli("snapshot", run_id, str(out)) == 0
    with Image.open(out) as picture:
        assert picture.format == "JPEG" and picture.mode == "RGB"  # alpha dropped
        pixels = np.asarray(picture).astype(int)
        comment = json.loads(picture.info["comment"])
    assert pixels.shape[0] > 64 and pixels.shape[1] == 96
    assert np.abs(pixels[:64] - frame).mean() < 4  # lossy, but the same picture
    assert comment["last_reward"] == "2.0" and comment["run_id"] == run_id
    assert comment["hud"].startswith("reward: 2.00")


def test_snapshot_widens_a_frame_narrower_than_its_hud(run_id, tmp_path):
    from mosaic_sdk.fastlane.snapshot import write_snapshot

    frame = np.full((3, 2, 4), 200, np.uint8)
    path = write_snapshot(tmp_path / "tiny.png", frame, FastLaneMetrics(1.0, 2.0, 3.0))
    pixels, text, _ = read_picture(path)
    assert pixels.shape[1] > 2 * 10 and pixels.shape[0] > 3
    np.testing.assert_array_equal(pixels[:3, :2], frame)
    assert (pixels[:3, 2:, 3] == 0).all()  # beside the frame: transparent
    assert text["step_rate_hz"] == "3.0"


def test_snapshot_without_pillow_names_the_pip_command(run_id, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=2, height=2)) as writer:
        writer.publish(np.zeros((2, 2, 3), np.uint8))
        with pytest.raises(UsageError) as err:
            run_cli("snapshot", run_id, str(tmp_path / "x.png"))
    assert "pip install 'mosaic-worker-sdk[images]'" in str(err.value)
    assert "Pillow" in str(err.value)
    assert not (tmp_path / "x.png").exists()


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


def test_wait_attaches_to_a_segment_that_appears_later(run_id, capsys):
    """`--wait S` covers a worker still starting: the segment is made while the command waits."""
    import threading
    import time

    made = threading.Event()
    done = threading.Event()

    def late_writer() -> None:
        time.sleep(0.4)
        with FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=2)) as writer:
            writer.publish(np.zeros((2, 4, 3), np.uint8))
            made.set()
            done.wait(30)

    thread = threading.Thread(target=late_writer)
    thread.start()
    try:
        assert run_cli("stat", run_id, "--json", "--interval", "0", "--wait", "30") == 0
        assert made.is_set()
        assert json.loads(capsys.readouterr().out)["width"] == 4
    finally:
        done.set()
        thread.join()


def test_wait_gives_up_with_the_time_it_waited(run_id):
    with pytest.raises(UsageError, match=r"no FastLane segment .*\(waited 0.2 s\)"):
        run_cli("stat", run_id, "--wait", "0.2")
