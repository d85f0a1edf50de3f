"""Frames from step lines: under ``mosaic run``, a worker that only writes ``render_payload``
(as the platform's proxy reads it) shows live frames on the run's FastLane stream."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.fastlane import FastLaneReader, FastLaneUnavailableError
from mosaic_sdk.fastlane.writer import create_fastlane_name
from mosaic_sdk.runner.recording import step_frames
from mosaic_sdk.runner.recording.step_frames import (
    MAX_PAYLOAD_LINE,
    MAX_STACK_FRAMES,
    BadPayload,
    OversizedPayload,
    StepFrames,
    frame_from_payload,
)
from mosaic_sdk.runner.reporting import Reporter
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.supervisor import run_worker

SHM = Path("/dev/shm")


@pytest.fixture
def frame_worker(monkeypatch: pytest.MonkeyPatch) -> str:
    from tests.runner.conftest import _discoverable

    _discoverable(monkeypatch, "framefixture=frame_workers:FrameFixture")
    return "framefixture"


def _no_segment(run_id: str) -> bool:
    return not (SHM / create_fastlane_name(run_id)).exists()


def _wait_frame(run_id: str, want, timeout: float = 30.0):
    """The first frame of ``run_id``'s stream for which ``want(frame)`` holds."""
    deadline = time.monotonic() + timeout
    reader = None
    try:
        while time.monotonic() < deadline:
            if reader is None:
                try:
                    reader = FastLaneReader.attach(run_id)
                except FastLaneUnavailableError:
                    time.sleep(0.02)
                    continue
            frame = reader.latest_frame()
            if frame is not None and want(frame):
                return frame
            time.sleep(0.01)
    finally:
        if reader is not None:
            reader.close()
    raise AssertionError(f"no matching frame on {run_id}'s stream within {timeout} s")


def _run_in_thread(worker, config, run_id, store_path, reporter):
    out = {}

    def go():
        out["result"] = run_worker(
            worker, config, run_id=run_id, store=store_path, reporter=reporter
        )

    thread = threading.Thread(target=go)
    thread.start()
    return thread, out


@pytest.mark.parametrize("mode,channels", [("frames", 3), ("json_string", 1)])
def test_a_worker_that_only_writes_render_payload_shows_live_frames(
    frame_worker, tmp_path, mode, channels
):
    run_id = f"frames-{mode}-{time.monotonic_ns()}"
    release = tmp_path / "release"
    config = {"mode": mode, "count": 20, "width": 5, "height": 2, "release": str(release)}
    reporter = Reporter()
    thread, out = _run_in_thread(frame_worker, config, run_id, tmp_path / "s.sqlite", reporter)
    try:
        # the last step's frame (every pixel 19) arrives while the run is still going
        frame = _wait_frame(run_id, lambda f: f.array()[0, 0, 0] == 19)
        assert (frame.width, frame.height, frame.channels) == (5, 2, channels)
        assert (frame.array() == 19).all()
        assert frame.metrics.last_reward == 19.0  # the step line's reward in the HUD
    finally:
        release.touch()
        thread.join(60)
    assert out["result"].status == "completed"
    assert _no_segment(run_id)  # the runner removes the stream it wrote
    assert not [w for w in reporter.warnings if "render_payload" in w]


def test_malformed_payloads_are_said_once_and_never_fatal(frame_worker, tmp_path):
    """End to end (how many are counted depends on how many lines one look of the runner
    takes in; the exact count is checked below, a line at a time)."""
    run_id = f"frames-bad-{time.monotonic_ns()}"
    release = tmp_path / "release"
    config = {"mode": "bad", "count": 5, "width": 3, "height": 3, "release": str(release)}
    reporter = Reporter()
    thread, out = _run_in_thread(frame_worker, config, run_id, tmp_path / "s.sqlite", reporter)
    try:
        # after the bad ones, the good RGBA frame still shows
        frame = _wait_frame(run_id, lambda f: f.channels == 4)
        assert (frame.array() == 7).all()
    finally:
        release.touch()
        thread.join(60)
    assert out["result"].status == "completed"
    said = [w for w in reporter.warnings if "render_payload is no frame" in w]
    assert len(said) == 1, reporter.warnings
    assert _no_segment(run_id)


BAD_PAYLOADS = [
    {"rgb": [[[1, 2, 3]], [[1, 2, 3], [4, 5, 6]]]},
    {"rgb": [[[1, 2]]]},
    {"rgb": [[[300, 0, 0]]]},
    "{not json",
    {"rgb": []},
]


def test_malformed_payloads_are_counted_and_the_count_is_said_at_the_end(tmp_path):
    """Each malformed payload the runner looks at is counted: the first is said with what was
    wrong, the end of the run says how many there were (issue 30, item 15: the test above
    once accepted no count at all)."""
    run_id = f"frames-count-{time.monotonic_ns()}"
    warnings: list[str] = []
    frames = StepFrames(run_id, fps=1000, warn=warnings.append)
    try:
        for i, payload in enumerate(BAD_PAYLOADS):
            line = json.dumps({"type": "step", "render_payload": payload})
            _offer_line(frames, run_id, i + 1, line)
            deadline = time.monotonic() + 30
            while frames.report.bad_payloads < i + 1 and time.monotonic() < deadline:
                time.sleep(0.005)
            assert frames.report.bad_payloads == i + 1
        text = json.dumps({"type": "step", "render_payload": {"mode": "ansi", "text": "x"}})
        _offer_line(frames, run_id, 9, text)  # no pixels: no error
        _offer_line(frames, run_id, 10, _step_line([[[7, 7, 7, 7]]]))
        _wait_frame(run_id, lambda f: f.channels == 4)
    finally:
        report = frames.close()
    assert report.bad_payloads == len(BAD_PAYLOADS) and report.frames == 1
    assert [w for w in warnings if "render_payload is no frame" in w] == [
        f"run {run_id}: a step line's render_payload is no frame: render_payload.rgb is ragged:"
        " its rows differ in length; such lines show no frame in the live view (counted, said"
        " once)"
    ]
    assert [w for w in warnings if "step lines had" in w] == [
        f"run {run_id}: 5 step lines had a render_payload that is no frame"
    ]
    assert _no_segment(run_id)


def test_a_worker_that_writes_fastlane_itself_is_left_alone(tmp_path):
    run_id = f"frames-own-{time.monotonic_ns()}"
    import subprocess
    import sys

    # another process (the worker) owns the run's segment
    code = (
        "import sys, time\n"
        "from mosaic_sdk.fastlane import FastLaneConfig, FastLaneWriter\n"
        "import numpy as np\n"
        f"w = FastLaneWriter.create({run_id!r}, FastLaneConfig(width=2, height=2))\n"
        "w.publish(np.full((2, 2, 3), 42, np.uint8))\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "w.close(); w.unlink()\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout.readline().strip() == "ready"
        frames = StepFrames(run_id, fps=1000)
        batch = LineBatch()
        line = json.dumps({"type": "step", "render_payload": {"rgb": [[[1, 1, 1]]]}})
        batch.steps.append((run_id, 1, 1, 0, 0, 0.0, 0, 0, 0, line, None))
        frames.offer(batch)
        report = frames.close()
        assert report.frames == 0 and report.disabled == "the worker writes FastLane itself"
        reader = FastLaneReader.attach(run_id)
        try:
            assert (reader.latest_frame().array() == 42).all()  # the worker's, untouched
        finally:
            reader.close()
    finally:
        worker.stdin.write("\n")
        worker.stdin.flush()
        worker.wait(30)
    assert _no_segment(run_id)


def test_the_newest_frame_of_a_batch_is_published(tmp_path):
    run_id = f"frames-unit-{time.monotonic_ns()}"
    frames = StepFrames(run_id, fps=1000)
    try:
        batch = LineBatch()
        for i in range(3):
            line = json.dumps({"type": "step", "render_payload": {"rgb": [[[i, i, i]]]}})
            batch.steps.append((run_id, i + 1, i + 1, 0, i, 0.0, 0, 0, 0, line, None))
        batch.steps.append((run_id, 9, 9, 0, 9, 0.0, 0, 0, 0, '{"type":"step"}', None))
        frames.offer(batch)
        frame = _wait_frame(run_id, lambda f: True)
        assert frame.array().tolist() == [[[2, 2, 2]]]
    finally:
        report = frames.close()
    assert report.frames == 1 and report.bad_payloads == 0
    assert _no_segment(run_id)


def test_the_platform_payload_forms():
    """What the platform's proxy turns into a frame, we do too (and the same frame)."""
    rgb = [[[1, 2, 3], [4, 5, 6]]]
    for payload in ({"rgb": rgb}, {"RGB": rgb}, json.dumps({"rgb": rgb})):
        frame = frame_from_payload(payload)
        assert frame.dtype == np.uint8 and frame.tolist() == rgb
    assert frame_from_payload({"rgb": [[[1.9]]]}).tolist() == [[[1]]]  # numpy's cast
    assert frame_from_payload({"rgb": [[[0, 0, 0, 255]]]}).shape == (1, 1, 4)
    # no pixels: no frame, no error
    for payload in (None, {}, {"mode": "ansi", "text": "x"}, {"rgb": None}):
        assert frame_from_payload(payload) is None
    # a stack of frames (a grid) is tiled, 2x2 for 3 frames
    stack = [[[[i, i, i]]] for i in (1, 2, 3)]
    assert frame_from_payload({"rgb": stack}).tolist() == [
        [[1, 1, 1], [2, 2, 2]],
        [[3, 3, 3], [0, 0, 0]],
    ]


@pytest.mark.parametrize(
    "payload,why",
    [
        ("{nope", "not JSON"),
        ([1, 2], "is a list"),
        ({"rgb": []}, "not an HxWxC list"),
        ({"rgb": [[[1, 2, 3]], [[1, 2, 3], [4, 5, 6]]]}, "ragged"),
        ({"rgb": [[[1, 2]]]}, "2 channels"),
        ({"rgb": [[[300, 0, 0]]]}, "0..255"),
        ({"rgb": [[[-1, 0, 0]]]}, "0..255"),
        ({"rgb": [[1, 2, 3]]}, "shape (1, 3)"),
        ({"rgb": [[["a", "b", "c"]]]}, "write integers"),
        ({"rgb": [[[float("nan"), 0, 0]]]}, "NaN"),
    ],
)
def test_pixels_that_are_no_frame_say_why(payload, why):
    with pytest.raises(BadPayload) as exc:
        frame_from_payload(payload)
    assert why in str(exc.value)


def test_a_frame_of_another_size_restarts_the_stream(tmp_path):
    run_id = f"frames-resize-{time.monotonic_ns()}"
    frames = StepFrames(run_id, fps=1000)
    try:
        for size in (1, 2):
            batch = LineBatch()
            rgb = np.full((size, size, 3), size, np.uint8).tolist()
            line = json.dumps({"type": "step", "render_payload": {"rgb": rgb}})
            batch.steps.append((run_id, size, size, 0, 0, 0.0, 0, 0, 0, line, None))
            frames.offer(batch)
            frame = _wait_frame(run_id, lambda f, s=size: f.width == s)
            assert (frame.array() == size).all()
    finally:
        frames.close()
    assert _no_segment(run_id)


def _offer_line(frames: StepFrames, run_id: str, line_no: int, line: str) -> None:
    batch = LineBatch()
    batch.steps.append((run_id, line_no, line_no, 0, line_no, 0.0, 0, 0, 0, line, None))
    frames.offer(batch)


def _step_line(rgb) -> str:
    return json.dumps({"type": "step", "render_payload": {"rgb": rgb}}, separators=(",", ":"))


def test_a_frame_wider_than_fastlane_carries_is_refused_and_the_next_frames_show(tmp_path):
    """Issue 30, item 7: a 1 x 40000 frame ended the live view for the rest of the run,
    saying nothing."""
    run_id = f"frames-wide-{time.monotonic_ns()}"
    warnings: list[str] = []
    frames = StepFrames(run_id, fps=1000, warn=warnings.append)
    try:
        _offer_line(frames, run_id, 1, _step_line([[[1, 1, 1]]]))
        _wait_frame(run_id, lambda f: f.array()[0, 0, 0] == 1)
        _offer_line(frames, run_id, 2, _step_line([[[2, 2, 2]] * 40000]))
        deadline = time.monotonic() + 30
        while frames.report.refused_payloads == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        _offer_line(frames, run_id, 3, _step_line([[[3, 3, 3]] * 2]))
        frame = _wait_frame(run_id, lambda f: f.array()[0, 0, 0] == 3)
        assert frame.width == 2
        _offer_line(frames, run_id, 4, _step_line([[[4, 4, 4]] * 40000]))
        _offer_line(frames, run_id, 5, _step_line([[[5, 5, 5]]]))
        _wait_frame(run_id, lambda f: f.array()[0, 0, 0] == 5)
    finally:
        report = frames.close()
    assert report.disabled is None
    assert report.frames >= 3
    assert report.refused_payloads >= 1
    said = [w for w in warnings if "is not shown" in w]
    assert said == [
        f"run {run_id}: a step line's render_payload is not shown: render_payload.rgb is a"
        " 1 x 40000 frame; FastLane frames are at most 32768 pixels high and wide; such payloads"
        " are skipped, the next frames show (counted, said once)"
    ]
    assert _no_segment(run_id)


def test_a_line_of_a_million_tiny_frames_is_refused_unparsed(tmp_path, monkeypatch):
    """Issue 30, item 7: a step line with a stack of 1M 1x1 frames cost 2.8 s of CPU and up
    to 1.45 GB; such a line is refused by its length, before it is parsed."""
    run_id = f"frames-stack-{time.monotonic_ns()}"
    line = _step_line([[[[9, 9, 9]]]] * 1_000_000)
    assert len(line) > MAX_PAYLOAD_LINE
    warnings: list[str] = []
    frames = StepFrames(run_id, fps=1000, warn=warnings.append)
    parsed: list[str] = []
    real = step_frames.from_json

    def counting(raw, *args, **kwargs):
        parsed.append(raw)
        return real(raw, *args, **kwargs)

    monkeypatch.setattr(step_frames, "from_json", counting)
    try:
        _offer_line(frames, run_id, 1, line)
        _offer_line(frames, run_id, 2, "{}")  # later rows without a payload change nothing
        deadline = time.monotonic() + 30
        while frames.report.refused_payloads == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        _offer_line(frames, run_id, 3, _step_line([[[4, 4, 4]]]))
        _wait_frame(run_id, lambda f: f.array()[0, 0, 0] == 4)
    finally:
        report = frames.close()
    assert line not in parsed
    assert report.refused_payloads == 1 and report.frames == 1
    [said] = [w for w in warnings if "is not shown" in w]
    assert f"the step line holding it has {len(line):,} characters" in said
    assert _no_segment(run_id)


def test_a_stack_of_too_many_frames_is_refused_before_numpy_reads_it():
    stack = [[[[1, 1, 1]]]] * (MAX_STACK_FRAMES + 1)
    with pytest.raises(OversizedPayload, match=f"a stack of {MAX_STACK_FRAMES + 1} frames"):
        frame_from_payload({"rgb": stack})
    assert frame_from_payload({"rgb": stack[:MAX_STACK_FRAMES]}).shape == (16, 16, 3)
    with pytest.raises(OversizedPayload, match="1 x 40000 frame"):
        frame_from_payload({"rgb": [[[0]] * 40000]})
