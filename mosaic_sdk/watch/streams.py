"""The live FastLane stream of a run page: a WebSocket of JPEG frames with their HUD."""

from __future__ import annotations

import asyncio
import io
import json
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mosaic_sdk.fastlane import (
    FastLaneCorruptError,
    FastLaneError,
    FastLaneFrame,
    FastLaneReader,
    FastLaneUnavailableError,
)
from mosaic_sdk.watch.data import finite_or_none

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

MAX_FPS = 30.0
CREDITS = 2
JPEG_QUALITY = 80
#: Seconds between looks for a segment that is not there (yet).
RETRY_SECONDS = 0.5
#: Seconds between polls of the ring's head while waiting for a new frame.
POLL_SECONDS = 0.002
#: Seconds without a new frame after which the writer's liveness is checked.
STALL_SECONDS = 1.0


def encode_jpeg(frame: FastLaneFrame, quality: int = JPEG_QUALITY) -> bytes:
    """JPEG bytes of a frame (gray stays gray; RGBA loses its alpha: JPEG has none)."""
    from PIL import Image  # optional dependency (the watch extra)

    mode = {1: "L", 3: "RGB", 4: "RGBA"}[frame.channels]
    image = Image.frombuffer(mode, (frame.width, frame.height), frame.data, "raw", mode, 0, 1)
    if mode == "RGBA":
        image = image.convert("RGB")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def frame_message(frame: FastLaneFrame, jpeg: bytes) -> bytes:
    """One binary WebSocket message: the header length, the JSON header, the JPEG."""
    m = frame.metrics
    header = json.dumps(
        {
            "type": "frame",
            "seq": frame.seq,
            "generation": frame.generation,
            "width": frame.width,
            "height": frame.height,
            "channels": frame.channels,
            "hud": {
                "last_reward": finite_or_none(m.last_reward),
                "rolling_return": finite_or_none(m.rolling_return),
                "step_rate_hz": finite_or_none(m.step_rate_hz),
            },
            "hud_text": m.hud_text(),
            "sent_ms": time.time() * 1000.0,
        }
    ).encode()
    return struct.pack(">I", len(header)) + header + jpeg


@dataclass
class _Viewer:
    """What one viewer's stream knows: its cap, its credits, the last frame sent."""

    interval: float
    credits: int = CREDITS
    last_sent: float = 0.0
    last_key: tuple[int, int] = (0, 0)
    size: tuple[int, int] | None = None
    note: str | None = None
    closed: bool = False


class FrameStream:
    """Streams one run's FastLane ring to one WebSocket (Starlette's ``WebSocket``)."""

    def __init__(self, websocket: WebSocket, run_id: str, fps: float = MAX_FPS) -> None:
        self.ws = websocket
        self.run_id = run_id
        self.viewer = _Viewer(interval=1.0 / max(1.0, min(MAX_FPS, fps)))
        self.reader: FastLaneReader | None = None
        self.ack = asyncio.Event()

    async def run(self) -> None:
        """Serve until the viewer goes away."""
        acks = asyncio.create_task(self._receive_acks())
        try:
            while not self.viewer.closed:
                await self._step()
        finally:
            acks.cancel()
            if self.reader is not None:
                self.reader.close()

    async def _receive_acks(self) -> None:
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                if message.get("text") == "ack":
                    self.viewer.credits = min(CREDITS, self.viewer.credits + 1)
                    self.ack.set()
        finally:
            self.viewer.closed = True
            self.ack.set()

    async def _note(self, state: str, message: str) -> None:
        """Send a status note once (the same note is not repeated)."""
        if self.viewer.note == message:
            return
        self.viewer.note = message
        try:
            await self.ws.send_text(
                json.dumps({"type": "status", "state": state, "message": message})
            )
        except Exception:  # noqa: BLE001 - the viewer went away mid-send
            self.viewer.closed = True

    async def _step(self) -> None:
        if self.reader is None:
            try:
                self.reader = FastLaneReader.attach(self.run_id)
            except (FastLaneUnavailableError, ValueError) as exc:
                await self._note("waiting", f"{exc}; this page shows frames once it publishes")
                await asyncio.sleep(RETRY_SECONDS)
                return
        frame = await self._next_frame()
        if frame is None:
            return
        if self.viewer.credits <= 0:
            self.ack.clear()
            if self.viewer.credits <= 0:
                await self.ack.wait()
            return  # read again: send the newest frame, not the one read before waiting
        now = time.monotonic()
        due = self.viewer.last_sent + self.viewer.interval
        if due - now > POLL_SECONDS:
            await asyncio.sleep(due - now)
            return
        # A fixed beat, so late wake-ups do not lower the rate; after a pause it restarts.
        self.viewer.last_sent = due if now - due < self.viewer.interval else now
        size = (frame.width, frame.height)
        if self.viewer.size is not None and size != self.viewer.size:
            old = self.viewer.size
            await self._note(
                "resized",
                f"the writer changed the frame size from {old[0]}x{old[1]} to {size[0]}x{size[1]}",
            )
        self.viewer.size = size
        jpeg = await asyncio.to_thread(encode_jpeg, frame)
        self.viewer.credits -= 1
        self.viewer.last_key = (frame.generation, frame.seq)
        try:
            await self.ws.send_bytes(frame_message(frame, jpeg))
        except Exception:  # noqa: BLE001 - the viewer went away mid-send
            self.viewer.closed = True
            return
        if self.viewer.note is not None and not self.viewer.note.startswith("the writer changed"):
            await self._note("streaming", "")

    async def _next_frame(self) -> FastLaneFrame | None:
        """The newest frame not sent yet, waiting for one (None: look again later)."""
        reader = self.reader
        assert reader is not None
        waited_since = time.monotonic()
        while not self.viewer.closed:
            try:
                unchanged = (
                    not reader.invalidated
                    and (reader.generation, reader.head) == self.viewer.last_key
                )
                frame = None if unchanged else reader.latest_frame()  # no copy when unchanged
            except FastLaneCorruptError as exc:
                await self._drop_reader("corrupt", f"the FastLane segment is corrupt: {exc}")
                return None
            except FastLaneError as exc:
                await self._drop_reader("gone", f"the FastLane segment went away: {exc}")
                return None
            if frame is not None and (frame.generation, frame.seq) != self.viewer.last_key:
                return frame
            if time.monotonic() - waited_since > STALL_SECONDS:
                problem = self._stalled(reader)
                if problem is not None:
                    await self._drop_reader("gone", problem)
                    return None
                waited_since = time.monotonic()
            await asyncio.sleep(POLL_SECONDS)
        return None

    def _stalled(self, reader: FastLaneReader) -> str | None:
        """Why no frame comes, when it is because the segment or its writer is gone."""
        try:
            if reader.invalidated:
                return (
                    "the FastLane segment was closed by its writer (the run ended or stopped "
                    "publishing); waiting for a new one"
                )
            status = reader.status()
        except FastLaneError as exc:
            return f"the FastLane segment went away: {exc}"
        if status.has_extension and status.writer_alive is False:
            return "the FastLane writer process is gone (the run ended or died)"
        return None

    async def _drop_reader(self, state: str, message: str) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        await self._note(state, message)
        await asyncio.sleep(RETRY_SECONDS)


__all__ = ["CREDITS", "MAX_FPS", "FrameStream", "encode_jpeg", "frame_message"]
