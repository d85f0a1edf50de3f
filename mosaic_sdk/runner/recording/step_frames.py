"""Live frames from step lines: a step line's ``render_payload`` published to the run's FastLane
stream under ``mosaic run``, as the platform's telemetry proxy does."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic_core import from_json

from mosaic_sdk.fastlane import (
    FastLaneBusyError,
    FastLaneConfig,
    FastLaneMetrics,
    FastLaneWriter,
    tile_frames,
)
from mosaic_sdk.fastlane.records import MAX_FRAME_SIDE
from mosaic_sdk.fastlane.segment import inspect_segment
from mosaic_sdk.fastlane.writer import create_fastlane_name
from mosaic_sdk.runner.storage.rows import LineBatch

#: Frames published per second at most (the viewer, ``mosaic watch``, draws at most 30).
DEFAULT_FPS = 30.0
#: Committed batches kept between two looks; older ones are not searched for a frame.
MAX_PENDING_BATCHES = 64
#: The longest step line (characters) whose ``render_payload`` is read: 4 MiB holds a frame of
#: about 580 x 580 x 3 as JSON. Larger frames belong in FastLane.
MAX_PAYLOAD_LINE = 4 * 1024 * 1024
#: The most frames of a stack (a vectorized env's grid) that are tiled into one picture.
MAX_STACK_FRAMES = 256
#: Where the raw line is in a stored step row (run_id, line_no, 7 numbers, raw, agent_id).
_RAW = 9
_KEY = '"render_payload"'


class BadPayload(ValueError):
    """A ``render_payload`` with pixels that are no frame (the message says why)."""


class OversizedPayload(BadPayload):
    """A ``render_payload`` that costs more to read or show than a live frame may."""


def _nesting(value: Any, most: int = 5) -> int:
    """How deep ``value``'s first elements nest lists (at most ``most``)."""
    depth = 0
    while depth < most and isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def frame_from_payload(payload: Any) -> Any:
    """The frame (an HxWxC uint8 numpy array) of a step line's ``render_payload`` (an object
    or a string holding one): its ``rgb`` (else ``RGB``), an HxWxC nested list of 0..255, C =
    1, 3 or 4, or an NxHxWxC stack tiled into one grid. None when it carries no pixels;
    :class:`BadPayload` when its pixels are no frame."""
    if payload is None:
        return None
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError as exc:
            raise BadPayload(f"render_payload is a string but not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise BadPayload(
            f"render_payload is a {type(payload).__name__}; write an object with an 'rgb' "
            "HxWxC list"
        )
    rgb = payload.get("rgb")
    if rgb is None:
        rgb = payload.get("RGB")
    if rgb is None:
        return None  # a text render or a hint: no pixels, nothing wrong
    if not isinstance(rgb, list) or not rgb:
        raise BadPayload(f"render_payload.rgb is {_short(rgb)}, not an HxWxC list of 0..255")
    if len(rgb) > MAX_STACK_FRAMES and _nesting(rgb) >= 4:  # before numpy reads them all
        raise OversizedPayload(
            f"render_payload.rgb is a stack of {len(rgb):,} frames; at most "
            f"{MAX_STACK_FRAMES} are tiled into one picture"
        )
    try:
        array = np.asarray(rgb)
    except ValueError:
        raise BadPayload("render_payload.rgb is ragged: its rows differ in length") from None
    if array.dtype.kind not in "biuf" or array.size == 0:
        raise BadPayload(
            f"render_payload.rgb holds {array.dtype.name} values; write integers 0..255"
        )
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise BadPayload("render_payload.rgb holds NaN or infinite values; pixels are 0..255")
    if array.min() < 0 or array.max() > 255:
        raise BadPayload(
            f"render_payload.rgb has values {int(array.min())}..{int(array.max())}; "
            "pixels are 0..255"
        )
    frame = array.astype(np.uint8)
    if frame.ndim == 4:  # a stack of frames: one grid, as the FastLane wrapper tiles them
        if frame.shape[-1] not in (1, 3, 4):
            raise BadPayload(f"render_payload.rgb has {frame.shape[-1]} channels; use 1, 3 or 4")
        frame = np.ascontiguousarray(tile_frames(list(frame)))
    if frame.ndim != 3:
        raise BadPayload(
            f"render_payload.rgb has shape {frame.shape}; a frame is height x width x channels"
        )
    if frame.shape[2] not in (1, 3, 4):
        raise BadPayload(f"render_payload.rgb has {frame.shape[2]} channels; use 1, 3 or 4")
    if max(frame.shape[:2]) > MAX_FRAME_SIDE:
        raise OversizedPayload(
            f"render_payload.rgb is a {frame.shape[0]} x {frame.shape[1]} frame; FastLane "
            f"frames are at most {MAX_FRAME_SIDE} pixels high and wide"
        )
    return frame


def frame_from_line(raw: str) -> tuple[dict[str, Any], Any] | None:
    """The step line ``raw`` parsed, and the frame of its ``render_payload``; None when the
    line is not a JSON object or carries no pixels. :class:`OversizedPayload` for a line
    longer than :data:`MAX_PAYLOAD_LINE` (not parsed)."""
    if len(raw) > MAX_PAYLOAD_LINE:  # not parsed: its lists alone would cost GBs
        raise OversizedPayload(
            f"the step line holding it has {len(raw):,} characters; a render_payload is "
            f"read from lines of at most {MAX_PAYLOAD_LINE:,} (write large frames with a "
            "FastLane writer, mosaic_sdk.fastlane)"
        )
    try:
        line = from_json(raw)  # pydantic-core's parser: ~1.6x json's on a frame's list
    except ValueError:
        try:
            line = json.loads(raw)  # what from_json refuses and json takes (lone surrogates)
        except ValueError:
            return None  # stored as a step line, yet not JSON to us: no frame
    if not isinstance(line, dict):
        return None
    frame = frame_from_payload(line.get("render_payload"))
    return None if frame is None else (line, frame)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass
class StepFramesReport:
    """What :class:`StepFrames` did for a run."""

    frames: int = 0
    #: Step lines whose render_payload had pixels that are no frame.
    bad_payloads: int = 0
    #: Render payloads not shown: past a bound (:class:`OversizedPayload`) or refused by FastLane.
    refused_payloads: int = 0
    #: Why nothing was published, when nothing could be (the worker writes FastLane itself).
    disabled: str | None = None


class StepFrames:
    """Publishes the newest ``render_payload`` of one run's committed step lines to its
    FastLane stream, at most ``fps`` times a second, on a thread of its own (bad payloads are
    counted and warned about once); nothing when the worker writes FastLane itself."""

    def __init__(
        self,
        run_id: str,
        *,
        fps: float = DEFAULT_FPS,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if not fps > 0:
            raise ValueError(f"fps must be > 0, got {fps!r}")
        self.run_id = run_id
        self.interval = 1.0 / fps
        self.report = StepFramesReport()
        self._warn = warn or (lambda _message: None)
        self._pending: deque[list[tuple[Any, ...]]] = deque(maxlen=MAX_PENDING_BATCHES)
        self._step_lines = 0
        self._cond = threading.Condition()
        self._closing = False
        self._closed = False
        self._writer: FastLaneWriter | None = None
        self._last_rate: tuple[float, int] | None = None
        self._thread = threading.Thread(target=self._loop, name="mosaic-step-frames", daemon=True)
        self._thread.start()

    # -- the store writer's thread ------------------------------------------------------------
    def offer(self, batch: LineBatch) -> None:
        """Note a committed batch's step rows (never waits, never raises)."""
        steps = batch.steps
        if steps and self.report.disabled is None:
            with self._cond:
                self._pending.append(steps)
                self._step_lines += len(steps)
                self._cond.notify()

    # -- its own thread -----------------------------------------------------------------------
    def _loop(self) -> None:
        due = 0.0
        try:
            while True:
                with self._cond:
                    while not self._pending and not self._closing:
                        self._cond.wait()
                    if not self._pending:
                        return
                wait = due - time.monotonic()
                if wait > 0 and not self._closing:
                    time.sleep(wait)  # batches that arrive meanwhile: only the newest frame counts
                with self._cond:
                    batches = list(self._pending)
                    self._pending.clear()
                    step_lines = self._step_lines
                raw = newest_payload_line(batches)
                if raw is not None:
                    try:
                        self._publish(raw, step_lines)
                    except OversizedPayload as exc:
                        self._refuse(str(exc))
                    except Exception as exc:  # noqa: BLE001 - a frame must never touch the run
                        # this frame is not shown; the next one is tried as usual
                        self._refuse(f"FastLane refused the frame: {type(exc).__name__}: {exc}")
                    due = time.monotonic() + self.interval
                if self.report.disabled is not None:
                    return
        finally:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
                writer.unlink()

    def _publish(self, raw: str, step_lines: int) -> None:
        try:
            got = frame_from_line(raw)
        except OversizedPayload:
            raise
        except BadPayload as exc:
            self.report.bad_payloads += 1
            if self.report.bad_payloads == 1:
                self._warn(
                    f"run {self.run_id}: a step line's render_payload is no frame: {exc}; such "
                    "lines show no frame in the live view (counted, said once)"
                )
            return
        if got is None:
            return
        line, frame = got
        writer = self._writer if self._writer is not None else self._open(frame)
        if writer is None:
            return
        writer.publish(frame, metrics=self._metrics(line, step_lines))
        self.report.frames += 1

    def _open(self, frame: Any) -> FastLaneWriter | None:
        """The run's writer, created for ``frame``'s size; None (and disabled) when the worker
        writes FastLane itself."""
        status = inspect_segment(create_fastlane_name(self.run_id), settle=0.0)
        if status is not None and status.initialised and not status.stale:
            if status.writer_pid != os.getpid():
                self._disable("the worker writes FastLane itself")
                return None
        height, width, channels = frame.shape
        try:
            self._writer = FastLaneWriter.create(
                self.run_id, FastLaneConfig(width=width, height=height, channels=channels)
            )
        except FastLaneBusyError:
            self._disable("the worker writes FastLane itself")
            return None
        return self._writer

    def _metrics(self, line: dict[str, Any], step_lines: int) -> FastLaneMetrics:
        now = time.monotonic()
        rate = 0.0
        if self._last_rate is not None:
            then, lines = self._last_rate
            if now > then:
                rate = (step_lines - lines) / (now - then)
        self._last_rate = (now, step_lines)
        reward = _number(line.get("reward"))
        rolling = _number(line.get("total_reward", line.get("episode_return")))
        return FastLaneMetrics(last_reward=reward, rolling_return=rolling, step_rate_hz=rate)

    def _refuse(self, why: str) -> None:
        self.report.refused_payloads += 1
        if self.report.refused_payloads == 1:
            self._warn(
                f"run {self.run_id}: a step line's render_payload is not shown: {why}; such "
                "payloads are skipped, the next frames show (counted, said once)"
            )

    def _disable(self, why: str) -> None:
        self.report.disabled = why
        with self._cond:
            self._pending.clear()

    # -- the end of the run -------------------------------------------------------------------
    def close(self, timeout: float = 2.0) -> StepFramesReport:
        """Publish the last frame waiting, close and remove the stream's segment; returns the
        report. Idempotent."""
        with self._cond:
            if self._closed:
                return self.report
            self._closed = self._closing = True
            self._cond.notify()
        self._thread.join(timeout)  # it publishes what waits, then closes the segment
        if self.report.bad_payloads > 1:
            self._warn(
                f"run {self.run_id}: {self.report.bad_payloads} step lines had a render_payload "
                "that is no frame"
            )
        if self.report.refused_payloads > 1:
            self._warn(
                f"run {self.run_id}: {self.report.refused_payloads} render_payloads were not "
                "shown (too large for a live frame, or refused by FastLane)"
            )
        return self.report


def newest_payload_line(batches: list[list[tuple[Any, ...]]]) -> str | None:
    """The text of the newest step row among ``batches`` (oldest first) that holds
    ``"render_payload"``; None when none does."""
    for rows in reversed(batches):
        for row in reversed(rows):
            raw = row[_RAW]
            if _KEY in raw:
                return str(raw)
    return None


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) else 0.0
