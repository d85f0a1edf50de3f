"""FastLane publish / read cost beside the deployed algorithm and a bare copy (the floor).

    python benchmarks/fastlane/publish_read.py [--quick]

Each figure is the median over repeats of the mean time per call in a batch, after one warm-up
pass over every slot (so first-touch page faults are not counted, for either ring).
"deployed" is a re-implementation of the version-1 algorithm as UPSTREAM.md describes it
(whole-header rewrites, a copy of every frame, 128 slots; tests/fastlane/legacy_v1.py).
"bare" copies the same frame into (or out of) one shared-memory buffer with numpy and does
nothing else; "bare ring" copies it into 4 frame-sized shared-memory buffers in turn, the
memory footprint of our default 4-slot ring. "python" is our ring with MOSAIC_ATOMICS=python
(the x86-only fallback), measured in a child process because the choice is made at import.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fastlane"))

from legacy_v1 import LegacyReader, LegacyWriter  # noqa: E402

from mosaic_sdk.fastlane import (  # noqa: E402
    FastLaneConfig,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneWriter,
)
from mosaic_sdk.shm import atomics  # noqa: E402
from mosaic_sdk.shm.segment import shm_open, shm_unlink  # noqa: E402

SHAPES = {"84x84x3": (84, 84, 3), "512x512x3": (512, 512, 3), "1920x1080x3": (1080, 1920, 3)}


def median_us(fn: Callable[[], object], calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples) * 1e6


def batch(shape: tuple[int, int, int], quick: bool) -> tuple[int, int]:
    n = shape[0] * shape[1] * shape[2]
    calls = min(2000, max(5, int(4_000_000 / n)))
    return (max(3, calls // 4), 5) if quick else (calls, 15)


def test_frame(shape: tuple[int, int, int]) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)


def ours_for_shape(label: str, shape: tuple[int, int, int], quick: bool) -> dict[str, float]:
    rid = f"bench-{uuid.uuid4().hex[:8]}"
    h, w, c = shape
    frame = test_frame(shape)
    calls, repeats = batch(shape, quick)
    m = FastLaneMetrics(1.0, 2.0, 3.0)
    out = {}
    with FastLaneWriter.create(rid, FastLaneConfig(width=w, height=h, channels=c)) as writer:
        reader = FastLaneReader.attach(rid)
        for _ in range(writer.config.capacity):
            writer.publish(frame, metrics=m)

        def view_and_check() -> None:
            view = reader.latest_view()
            view.still_valid()

        out[f"publish {label}"] = median_us(
            lambda: writer.publish(frame, metrics=m), calls, repeats
        )
        out[f"latest_frame {label}"] = median_us(reader.latest_frame, calls, repeats)
        out[f"latest_view {label}"] = median_us(view_and_check, calls, repeats)
        reader.close()
    return out


def measure_ours(quick: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, shape in SHAPES.items():
        out.update(ours_for_shape(label, shape, quick))
    words = atomics.SharedWords(bytearray(64))
    out["acquire load_u64"] = median_us(lambda: words.load_u64(8), 20000, 9)
    out["release store_u64"] = median_us(lambda: words.store_u64(8, 1), 20000, 9)
    words.release()
    return out


def bare_for_shape(label: str, shape: tuple[int, int, int], quick: bool) -> dict[str, float]:
    frame = test_frame(shape)
    calls, repeats = batch(shape, quick)
    name = f"mosaic.fastlane.bench-bare-{uuid.uuid4().hex[:8]}"
    fd = shm_open(name, create=True)
    out = {}
    try:
        os.ftruncate(fd, 4 * frame.nbytes)
        mm = mmap.mmap(fd, 4 * frame.nbytes)
        dsts = [
            np.frombuffer(mm, np.uint8, frame.nbytes, i * frame.nbytes).reshape(shape)
            for i in range(4)
        ]
        for i in range(4):
            np.copyto(dsts[i], frame)
        turn = [0]

        def ring_copy() -> None:
            np.copyto(dsts[turn[0] & 3], frame)
            turn[0] += 1

        out[f"bare copy in {label}"] = median_us(lambda: np.copyto(dsts[0], frame), calls, repeats)
        out[f"bare ring copy in {label}"] = median_us(ring_copy, calls, repeats)
        out[f"bare copy out {label}"] = median_us(dsts[0].tobytes, calls, repeats)
        dsts.clear()  # drop the views before unmapping
        mm.close()
    finally:
        os.close(fd)
        shm_unlink(name)
    return out


def deployed_for_shape(label: str, shape: tuple[int, int, int], quick: bool) -> dict[str, float]:
    h, w, c = shape
    frame = test_frame(shape)
    calls, repeats = batch(shape, quick)
    rid = f"bench-legacy-{uuid.uuid4().hex[:8]}"
    legacy = LegacyWriter(rid, w, h, c)
    met = (1.0, 2.0, 3.0)
    out = {}
    try:
        reader = LegacyReader(rid)
        for _ in range(legacy.capacity):
            legacy.publish(frame, met)
        out[f"deployed publish {label}"] = median_us(
            lambda: legacy.publish(frame, met), calls, repeats
        )
        out[f"deployed read {label}"] = median_us(reader.latest_frame, calls, repeats)
        reader.close()
    finally:
        legacy.shm.unlink()
        legacy.close()
    return out


def measure_baselines(quick: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, shape in SHAPES.items():
        out.update(bare_for_shape(label, shape, quick))
        out.update(deployed_for_shape(label, shape, quick))
    return out


def cell(value: float | None, width: int, fmt: str = "{:.2f}") -> str:
    return f"{'-':>{width}}" if value is None else f"{fmt.format(value):>{width}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--ours-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ours_json:
        print(json.dumps(measure_ours(args.quick)))
        return
    native = measure_ours(args.quick)
    env = dict(os.environ, MOSAIC_ATOMICS="python")
    cmd = [sys.executable, __file__, "--ours-json"] + (["--quick"] if args.quick else [])
    child = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    python = json.loads(child.stdout)
    base = measure_baselines(args.quick)
    print(
        f"FastLane publish/read, median us per call; atomics {atomics.IMPLEMENTATION}; "
        f"CPython {sys.version.split()[0]}; {os.uname().machine}\n"
    )
    head = (
        f"{'operation':<26}{'ours':>9}{'python':>9}{'deployed':>10}{'bare':>9}"
        f"{'bare ring':>10}{'ours/bare':>10}{'ours/ring':>10}{'deployed/ours':>14}"
    )
    print(head)
    print("-" * len(head))
    rows = (
        ("publish", "deployed publish", "bare copy in", "bare ring copy in"),
        ("latest_frame", "deployed read", "bare copy out", None),
        ("latest_view", None, None, None),
    )
    for label in SHAPES:
        for op, dep, bare, ring in rows:
            key = f"{op} {label}"
            ours, py = native[key], python[key]
            d = base.get(f"{dep} {label}") if dep else None
            b = base.get(f"{bare} {label}") if bare else None
            r = base.get(f"{ring} {label}") if ring else None
            print(
                f"{key:<26}"
                + cell(ours, 9)
                + cell(py, 9)
                + cell(d, 10)
                + cell(b, 9)
                + cell(r, 10)
                + cell(ours / b if b else None, 10, "{:.2f}x")
                + cell(ours / r if r else None, 10, "{:.2f}x")
                + cell(d / ours if d else None, 14, "{:.1f}x")
            )
    for key in ("acquire load_u64", "release store_u64"):
        print(f"{key:<26}{native[key]:>9.3f}{python[key]:>9.3f}")
    print(
        "\nbare = np.copyto into one shared-memory buffer (cache-hot); bare ring = np.copyto into 4"
        "\nframe-sized shared-memory buffers in turn; for reads, bare = ndarray.tobytes() from"
        "\nshared memory. latest_view = zero-copy view + still_valid()."
    )


if __name__ == "__main__":
    main()
