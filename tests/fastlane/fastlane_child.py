"""Child processes for the FastLane tests (run as a script: ``python fastlane_child.py MODE ...``).

writer RUN_ID W H C SECONDS FPS   publish pattern frames (FPS 0 = flat out) for at most SECONDS
                                  or until stdin closes, print JSON stats
reader RUN_ID SECONDS HZ          read pattern frames (HZ 0 = flat out), print JSON stats
hold RUN_ID                       create a writer, publish one frame, print READY, sleep
attach RUN_ID                     attach with FastLaneReader, read one frame, exit
legacy-attach RUN_ID              attach the deployed way (SharedMemory), read, exit
legacy-writer RUN_ID SECONDS      the deployed writer, flat out at 84x84x3
legacy-reader RUN_ID SECONDS      the deployed reader, flat out

A pattern frame k has k (u64, little-endian) in its first 8 bytes and k % 251 in every other
byte; its metrics are (k, -k, k / 2). A reader checks both, so a torn frame or metrics of
another frame are counted, not guessed.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def pattern(shape: tuple[int, int, int], k: int, out: np.ndarray | None = None) -> np.ndarray:
    frame = np.empty(shape, np.uint8) if out is None else out
    flat = frame.reshape(-1)
    flat[:] = k % 251
    flat[:8] = np.frombuffer(int(k).to_bytes(8, "little"), np.uint8)
    return frame


def check(data: np.ndarray, metrics: tuple[float, float, float]) -> tuple[bool, bool]:
    """(torn, mismatched) for one frame read."""
    flat = data.reshape(-1)
    k = int.from_bytes(flat[:8].tobytes(), "little")
    torn = bool((flat[8:] != k % 251).any())
    mismatched = metrics != (float(k), float(-k), k / 2)
    return torn, mismatched


def writer(run_id: str, w: int, h: int, c: int, seconds: float, fps: float) -> None:
    import threading

    from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneWriter

    stop = threading.Event()

    def wait_for_eof() -> None:  # the parent closes our stdin when its reader is done
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    shape = (h, w, c)
    frame = np.empty(shape, np.uint8)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=w, height=h, channels=c)) as wr:
        print("READY", flush=True)
        start = time.monotonic()
        k = 0
        period = 1.0 / fps if fps else 0.0
        while time.monotonic() - start < seconds and not stop.is_set():
            k += 1
            pattern(shape, k, frame)
            wr.publish(frame, metrics=FastLaneMetrics(float(k), float(-k), k / 2))
            if period:
                time.sleep(max(0.0, start + k * period - time.monotonic()))
        elapsed = time.monotonic() - start
    print(json.dumps({"published": k, "seconds": elapsed}), flush=True)


def reader(run_id: str, seconds: float, hz: float) -> None:
    from mosaic_sdk.fastlane import FastLaneReader, FastLaneUnavailableError

    deadline = time.monotonic() + 10
    while True:
        try:
            rd = FastLaneReader.attach(run_id)
            break
        except FastLaneUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)
    print("READY", flush=True)
    reads = torn = mismatched = empty = 0
    seen: set[int] = set()
    out: np.ndarray | None = None
    start = time.monotonic()
    period = 1.0 / hz if hz else 0.0
    n = 0
    while time.monotonic() - start < seconds:
        n += 1
        if out is None:
            out = np.empty((rd.height, rd.width, rd.channels), np.uint8)
        frame = rd.read_latest_into(out)
        if frame is None:
            empty += 1
        else:
            reads += 1
            seen.add(frame.seq)
            m = frame.metrics
            t, mm = check(out, (m.last_reward, m.rolling_return, m.step_rate_hz))
            torn += t
            mismatched += mm
        if period:
            time.sleep(max(0.0, start + n * period - time.monotonic()))
    elapsed = time.monotonic() - start
    rd.close()
    print(
        json.dumps(
            {
                "reads": reads,
                "distinct": len(seen),
                "torn": torn,
                "mismatched": mismatched,
                "empty": empty,
                "retries": rd.retries,
                "seconds": elapsed,
            }
        ),
        flush=True,
    )


def hold(run_id: str) -> None:
    from mosaic_sdk.fastlane import FastLaneConfig, FastLaneMetrics, FastLaneWriter

    wr = FastLaneWriter.create(run_id, FastLaneConfig(width=4, height=4))
    wr.publish(pattern((4, 4, 3), 5), metrics=FastLaneMetrics(5.0, -5.0, 2.5))
    print("READY", flush=True)
    time.sleep(600)


def attach(run_id: str) -> None:
    from mosaic_sdk.fastlane import FastLaneReader

    rd = FastLaneReader.attach(run_id)
    assert rd.latest_frame() is not None
    print("READ", flush=True)


def legacy_attach(run_id: str) -> None:
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from legacy_v1 import LegacyReader

    rd = LegacyReader(run_id)
    assert rd.latest_frame() is not None
    rd.close()
    print("READ", flush=True)


def legacy_writer(run_id: str, seconds: float) -> None:
    """The deployed algorithm, flat out at 84x84x3 (benchmarks/fastlane/stress.py)."""
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from legacy_v1 import LegacyWriter

    shape = (84, 84, 3)
    frame = np.empty(shape, np.uint8)
    wr = LegacyWriter(run_id, 84, 84, 3)
    print("READY", flush=True)
    start = time.monotonic()
    k = 0
    while time.monotonic() - start < seconds:
        k += 1
        pattern(shape, k, frame)
        wr.publish(frame, metrics=(float(k), float(-k), k / 2))
    wr.shm.unlink()
    wr.close()
    print(json.dumps({"published": k, "seconds": time.monotonic() - start}), flush=True)


def legacy_reader(run_id: str, seconds: float) -> None:
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from legacy_v1 import LegacyReader

    rd = LegacyReader(run_id)
    print("READY", flush=True)
    reads = torn = mismatched = empty = 0
    start = time.monotonic()
    header_errors = 0
    while time.monotonic() - start < seconds:
        try:
            got = rd.latest_frame()
        except ZeroDivisionError:  # read the header while pack_into had zeroed it (defect 3)
            header_errors += 1
            continue
        if got is None:
            empty += 1
            continue
        reads += 1
        t, mm = check(np.frombuffer(got[0], np.uint8), got[1])
        torn += t
        mismatched += mm
    elapsed = time.monotonic() - start
    # the writer unlinks; keep this process's resource tracker from unlinking it first
    from multiprocessing import resource_tracker

    resource_tracker.unregister(rd.shm._name, "shared_memory")
    rd.close()
    print(
        json.dumps(
            {
                "reads": reads,
                "torn": torn,
                "mismatched": mismatched,
                "empty": empty,
                "retries": empty,
                "seconds": elapsed,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "writer":
        writer(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), float(rest[4]), float(rest[5]))
    elif mode == "reader":
        reader(rest[0], float(rest[1]), float(rest[2]))
    elif mode == "hold":
        hold(rest[0])
    elif mode == "attach":
        attach(rest[0])
    elif mode == "legacy-attach":
        legacy_attach(rest[0])
    elif mode == "legacy-writer":
        legacy_writer(rest[0], float(rest[1]))
    elif mode == "legacy-reader":
        legacy_reader(rest[0], float(rest[1]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
