"""A worker's FastLane side, as a script: ``python publisher_child.py MODE RUN_ID ...``.

pump RUN_ID W H [RESIZE_EVERY]   publish numbered frames through FramePump (what the gymnasium
                                 wrappers use) about every 2 ms until stdin closes; with
                                 RESIZE_EVERY, every that many frames the next frame has
                                 another height (the ring is re-created: a new generation).
                                 Prints READY after the first frame, then one JSON object.
close-race RUN_ID ROUNDS         per round: a thread publishes 600x400x3 frames (CartPole's,
                                 copied with the GIL released) while the main thread closes
                                 the writer. Prints one JSON object.

Frame k carries k in its first 8 bytes (little-endian).
"""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np

from mosaic_sdk.fastlane import FastLaneConfig, FastLaneError, FastLaneWriter
from mosaic_sdk.fastlane.pump import FramePump


def numbered(shape: tuple[int, int, int], k: int) -> np.ndarray:
    frame = np.full(shape, k % 251, np.uint8)
    frame.reshape(-1)[:8] = np.frombuffer(k.to_bytes(8, "little"), np.uint8)
    return frame


def pump(run_id: str, w: int, h: int, resize_every: int) -> None:
    stop = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    fp = FramePump(run_id, interval_ms=0)
    k = 0
    generations = set()
    while not stop.is_set():
        k += 1
        height = h + (k // resize_every) % 2 if resize_every else h
        fp.record_step(1.0, False)
        fp.publish(numbered((height, w, 3), k))
        if fp.writer is not None and not fp.writer.closed:
            generations.add(fp.writer.generation)
        if k == 1:
            print("READY", flush=True)
        time.sleep(0.002)
    result = {
        "offered": k,
        "published": fp.frames_published,
        "disabled": fp.disabled_reason,
        "generations": sorted(generations),
    }
    fp.close()
    print(json.dumps(result), flush=True)


def close_race(run_id: str, rounds: int) -> None:
    frame = np.ones((400, 600, 3), np.uint8)
    stopped = []
    for _ in range(rounds):
        writer = FastLaneWriter.create(run_id, FastLaneConfig(width=600, height=400))
        started = threading.Event()

        def publish(wr: FastLaneWriter = writer, go: threading.Event = started) -> None:
            try:
                while True:
                    wr.publish(frame)
                    go.set()
            except FastLaneError as exc:  # published into a closed writer: the clean end
                stopped.append(str(exc))

        thread = threading.Thread(target=publish)
        thread.start()
        started.wait()
        time.sleep(0.01)
        writer.close()  # while the thread is (most likely) inside a copy
        writer.unlink()
        thread.join()
    print(json.dumps({"rounds": rounds, "stopped": len(stopped)}), flush=True)


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "pump":
        pump(rest[0], int(rest[1]), int(rest[2]), int(rest[3]) if len(rest) > 3 else 0)
    elif mode == "close-race":
        close_race(rest[0], int(rest[1]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
