"""Telemetry emitter: step lines per second written to a pipe, and the delay of its batching.

Throughput: a TelemetryEmitter writes N step lines into a pipe drained by another process
(`wc -l`), with its default batching (flush at 64 KiB or 20 ms) and with flush_interval=0
(a flush per line); the baseline, measured in the same run, is the platform emitter's way:
``json.dumps(obj, sort_keys=True)`` and a flush per line.

Delay: how long after ``emit`` a line is readable at the other end of the pipe, for lines
emitted one at a time 30 ms apart (the worst case for batching: nothing else fills the
buffer). A thread blocked in read() on the pipe timestamps each arrival.

    python benchmarks/telemetry/bench_emitter.py [--lines 300000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from mosaic_sdk.telemetry import TelemetryEmitter


def pipe_to_wc() -> tuple[subprocess.Popen[bytes], io.TextIOWrapper]:
    proc = subprocess.Popen(["wc", "-l"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    stream = io.TextIOWrapper(proc.stdin, encoding="utf-8", newline="\n", write_through=False)
    return proc, stream


def finish(proc: subprocess.Popen[bytes], stream: io.TextIOWrapper, lines: int) -> None:
    stream.close()
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait()
    assert int(out.split()[0]) >= lines, out


def ours(lines: int, flush_interval: float | None, rich_lines: bool = False) -> float:
    proc, stream = pipe_to_wc()
    em = TelemetryEmitter("bench", stream, flush_interval=flush_interval)
    step = em.step
    obs = [0.01, -0.02, 0.03, 0.04]
    start = time.perf_counter()
    if rich_lines:
        for i in range(lines):
            step(0, i, 1.0, action=1, observation=obs)
    else:
        for i in range(lines):
            step(0, i, 1.0)
    em.close()
    elapsed = time.perf_counter() - start
    finish(proc, stream, lines)
    return lines / elapsed


def baseline(lines: int) -> float:
    """The platform's emitter style: json.dumps(sort_keys=True) and a flush for every line."""
    proc, stream = pipe_to_wc()
    start = time.perf_counter()
    for i in range(lines):
        obj = {
            "type": "step",
            "run_id": "bench",
            "episode_index": 0,
            "step_index": i,
            "reward": 1.0,
            "terminated": False,
            "truncated": False,
            "ts_unix_ns": time.time_ns(),
        }
        stream.write(json.dumps(obj, sort_keys=True) + "\n")
        stream.flush()
    elapsed = time.perf_counter() - start
    finish(proc, stream, lines)
    return lines / elapsed


def delays(flush_interval: float | None, count: int = 40, gap: float = 0.03) -> list[float]:
    """Seconds from step() returning to the line being read at the other end, per line."""
    r, w = os.pipe()
    stream = io.TextIOWrapper(io.FileIO(w, "w"), encoding="utf-8", newline="\n")
    arrivals: list[float] = []

    def reader() -> None:
        pending = b""
        while True:
            chunk = os.read(r, 65536)
            now = time.monotonic()
            if not chunk:
                return
            pending += chunk
            *complete, pending = pending.split(b"\n")
            arrivals.extend(now for _ in complete)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    em = TelemetryEmitter("bench", stream, flush_interval=flush_interval)
    emitted: list[float] = []
    for i in range(count):
        em.step(0, i, 1.0)
        emitted.append(time.monotonic())
        time.sleep(gap)
    em.close()
    stream.close()
    thread.join(5)
    os.close(r)
    return [a - e for a, e in zip(arrivals, emitted, strict=True)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=300_000)
    p.add_argument("--baseline-lines", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()

    def med(f, *a):  # type: ignore[no-untyped-def]
        return statistics.median(f(*a) for _ in range(args.repeat))

    base = med(baseline, args.baseline_lines)
    rows = [
        ("TelemetryEmitter, default batching", med(ours, args.lines, None), ">= 300,000"),
        ("TelemetryEmitter, flush_interval=0", med(ours, args.lines // 3, 0.0), ""),
        ("TelemetryEmitter, default, +action+obs(4)", med(ours, args.lines, None, True), ""),
        ("baseline: json.dumps + flush per line", base, ""),
    ]
    print(f"emitter throughput into a pipe, median of {args.repeat} runs")
    print(f"{'measure':<44} {'lines/s':>12} {'ratio':>8} {'goal':>12}")
    for name, rate, goal in rows:
        print(f"{name:<44} {rate:>12,.0f} {rate / base:>7.1f}x {goal:>12}")
    print()
    print("delay from step() to readable at the other end (lines 30 ms apart), ms")
    print(f"{'emitter setting':<44} {'median':>8} {'p90':>8} {'max':>8}")
    for name, interval in (("default (flush_interval=0.02)", None), ("flush_interval=0", 0.0)):
        d = sorted(x * 1e3 for x in delays(interval))
        p90 = d[int(0.9 * (len(d) - 1))]
        print(f"{name:<44} {statistics.median(d):>8.2f} {p90:>8.2f} {d[-1]:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
