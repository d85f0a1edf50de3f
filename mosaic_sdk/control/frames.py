"""The client side of interactive frames: wait until the frame a reply names is in FastLane."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mosaic_sdk.control.protocol import ControlTimeout, FrameRef

if TYPE_CHECKING:
    from mosaic_sdk.fastlane import FastLaneFrame, FastLaneReader

#: Seconds between two looks at the segment while waiting.
POLL_S = 0.002


class FrameWaiter:
    """Waits for frames of FastLane runs, through one reader kept attached between calls."""

    def __init__(self) -> None:
        self._attached: tuple[str, FastLaneReader] | None = None

    def wait(
        self, ref: FrameRef, timeout: float, *, note: Callable[[], str] = str
    ) -> FastLaneFrame:
        """The newest frame once the frame of ``ref``'s state is published (see the module
        docstring); ``ControlTimeout`` after ``timeout`` seconds (``note()`` is added to its
        message)."""
        target = ref.frames_published + (1 if ref.pending else 0)
        deadline = time.monotonic() + timeout
        while True:
            frame = self._newest(ref.fastlane_run_id)
            if frame is not None and frame.seq >= target:
                return frame
            if time.monotonic() >= deadline:
                seen = 0 if frame is None else frame.seq
                raise ControlTimeout(
                    f"frame {target} of FastLane run {ref.fastlane_run_id!r} was not published "
                    f"within {timeout:g} s (the segment holds {seen} frames){note()}"
                )
            time.sleep(POLL_S)

    def _newest(self, run_id: str) -> FastLaneFrame | None:
        # FastLane and numpy only when a frame is waited for
        from mosaic_sdk.fastlane import FastLaneError, FastLaneReader

        if self._attached is not None and self._attached[0] != run_id:
            self.close()
        if self._attached is None:
            try:
                self._attached = (run_id, FastLaneReader.attach(run_id))
            except FastLaneError:
                return None  # not there yet, or already gone: the caller's deadline decides
        frame = self._attached[1].latest_frame()
        if frame is not None and frame.generation > 1:
            raise ValueError(
                f"FastLane run {run_id!r} changed its frame size (ring generation "
                f"{frame.generation}), so its frames cannot be counted against "
                "frames_published; read the newest frame with FastLaneReader instead"
            )
        return frame

    def close(self) -> None:
        """Let go of the segment (never removes it)."""
        attached, self._attached = self._attached, None
        if attached is not None:
            attached[1].close()
