"""What frames from step lines cost (mosaic_sdk.runner.recording.step_frames).

Two figures, medians of --repeat runs, each beside its baseline measured in the same run:

- the search for the newest ``render_payload`` among committed step rows that carry none (what
  every run of a worker that never renders pays, on the step-frames thread), per row, beside
  iterating the same rows and touching their text (what any consumer of the rows pays);
- one frame from a step line's text to the FastLane ring (JSON parse, checks, publish) at
  84x84x3, beside the platform proxy's way (json.loads, np.asarray(rgb, uint8), publish);
- a hostile line, a stack of --stack 1x1 frames (1M: a 12 MB line), refused by the bounds of
  ``frame_from_line`` (issue 30, item 7), beside reading it unbounded as before (parse,
  numpy, tiling the stack): CPU seconds and peak traced memory.

    python benchmarks/runner/bench_step_frames.py [--rows 1000000] [--repeat 5] [--stack N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import tracemalloc

import numpy as np
from pydantic_core import from_json

from mosaic_sdk.fastlane import FastLaneConfig, FastLaneWriter, tile_frames
from mosaic_sdk.runner.recording.step_frames import (
    OversizedPayload,
    frame_from_line,
    frame_from_payload,
    newest_payload_line,
)


def step_row(i: int, payload: object = None) -> tuple:
    line = {"type": "step", "episode_index": 0, "step_index": i, "reward": 1.0,
            "terminated": False, "observation": [0.1, 0.2, 0.3, 0.4]}  # fmt: skip
    if payload is not None:
        line["render_payload"] = payload
    return ("r", i, i, 0, i, 1.0, 0, 0, 0, json.dumps(line), None)


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--stack", type=int, default=1_000_000)
    args = p.parse_args()
    rows = [step_row(i) for i in range(args.rows)]
    batches = [rows[i : i + 4096] for i in range(0, len(rows), 4096)]

    def touch() -> None:
        n = 0
        for batch in batches:
            for row in batch:
                n += len(row[9])

    scan = median_time(lambda: newest_payload_line(batches), args.repeat)
    base = median_time(touch, args.repeat)
    print(f"search of {args.rows:,} step rows without a render_payload, median of {args.repeat}")
    print(f"  step frames' search      {scan / args.rows * 1e9:8.1f} ns/row")
    print(f"  baseline: touch each row {base / args.rows * 1e9:8.1f} ns/row")

    rgb = np.random.default_rng(0).integers(0, 256, (84, 84, 3)).tolist()
    raw = step_row(0, {"rgb": rgb})[9]
    run_id = f"bench-step-frames-{os.getpid()}"
    writer = FastLaneWriter.create(run_id, FastLaneConfig(width=84, height=84))
    try:
        n = 50

        def ours() -> None:
            for _ in range(n):
                writer.publish(frame_from_payload(from_json(raw)["render_payload"]))

        def platform_way() -> None:
            for _ in range(n):
                arr = np.asarray(json.loads(raw)["render_payload"]["rgb"], dtype=np.uint8)
                writer.publish(arr.tobytes())

        a = median_time(ours, args.repeat) / n
        b = median_time(platform_way, args.repeat) / n
    finally:
        writer.close()
        writer.unlink()
    print(f"one 84x84x3 frame from a step line's text to the ring, median of {args.repeat}")
    share = f"at 30 frames/s: {a * 30:.1%} of a core"
    print(f"  step frames              {a * 1e3:8.2f} ms/frame  ({share})")
    print(f"  baseline: platform's way {b * 1e3:8.2f} ms/frame")

    stack = [[[[9, 9, 9]]]] * args.stack
    hostile = json.dumps({"type": "step", "render_payload": {"rgb": stack}}, separators=(",", ":"))
    del stack

    def bounded() -> None:
        try:
            frame_from_line(hostile)
        except OversizedPayload:
            pass

    def unbounded() -> None:  # what one look at such a line cost before the bounds
        rgb = from_json(hostile)["render_payload"]["rgb"]
        tile_frames(list(np.asarray(rgb).astype(np.uint8)))

    print(f"a line of a stack of {args.stack:,} 1x1 frames ({len(hostile):,} characters)")
    for name, fn in (("step frames (bounded)", bounded), ("baseline: unbounded", unbounded)):
        cpu, peak = [], []
        for _ in range(min(args.repeat, 3)):
            start = time.process_time()
            fn()
            cpu.append(time.process_time() - start)
            tracemalloc.start()  # a second pass: tracing slows allocation, so not timed
            fn()
            peak.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        print(
            f"  {name:<24} {statistics.median(cpu):8.3f} s CPU, "
            f"peak {statistics.median(peak) / 2**20:8.1f} MiB (median of {len(cpu)})"
        )


if __name__ == "__main__":
    main()
