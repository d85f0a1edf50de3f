"""Ingest with series (issue 32): `mosaic run` stores a flood of step lines with one `metrics`
line (two series) per 10 step lines, beside today's ingest of the same step lines without
series, alternating in the same run.

Two parts, each with its baseline (the same step lines without series) measured in the same
run, alternating ABAB, medians of ``--repeat`` repetitions and their ratio:

1. ``runner alone``: the runner's own path in this process, without a worker competing for
   the CPUs: the flood worker's lines (made once by the telemetry emitter, split as the
   pipe reader splits them) go through :class:`~mosaic_sdk.runner.recording.recorder.
   RunRecorder` (batcher, ingest, series, store writer thread, SQLite). This is the ingest's
   capacity in lines/s (what the goal is about), and the least disturbed by other load;
2. ``mosaic run``: end to end, worker process and all (below).

The flood worker (``flood_worker.py``, ``series_every``) writes ``--lines`` step lines and,
after every ``--series-every`` of them, one ``metrics`` line of two values (``losses/value``
and ``charts/sps``). Each repetition runs twice, alternating: without series (the baseline:
what ``bench_e2e.py`` measures) and with them. Printed: lines/s of every stdout line stored
(step lines plus metrics lines) and of the step lines alone, the runner's CPU per line, and
what the store holds: step lines, metrics events and series points against what the worker
wrote (0 lost, 0 refused). Goal: >= 100k lines/s with series, 0 lost.

    python benchmarks/runner/bench_series_ingest.py [--lines 1000000] [--series-every 10]
        [--repeat 3] [--alone-lines 200000] [--alone-repeat 5] [--skip-e2e]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_e2e import cpu_seconds, setup_env
from flood_worker import flood


def one_run(lines: int, series_every: int, tmp: Path, rep: int) -> dict[str, float]:
    from mosaic_sdk.runner.storage.store import RunStore
    from mosaic_sdk.runner.supervisor import resolve_worker, run_worker

    store = tmp / f"run-{rep}-{series_every}.sqlite"
    handle = resolve_worker("flood")  # discovery is not part of the measured run
    config = {"lines": lines, "series_every": series_every}
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    result = run_worker(handle, config, store=store, runs_dir=tmp / "runs", stall_after=60.0)
    elapsed = time.perf_counter() - start
    cpu1 = cpu_seconds()
    assert result.status == "completed", result.error
    metrics_lines = lines // series_every if series_every else 0
    total = lines + metrics_lines
    with RunStore(store, readonly=True) as s:
        counts = s.count_rows(result.run_id)
        series = s.series_counts(result.run_id)
        points = {i.name: i.points for i in s.series(result.run_id)}
    want_points = (
        {"losses/value": metrics_lines, "charts/sps": metrics_lines} if series_every else {}
    )
    return {
        "lines/s": total / elapsed,
        "step lines/s": lines / elapsed,
        "runner us/line": (cpu1[0] - cpu0[0]) / total * 1e6,
        "lost steps": lines - counts["steps"],
        # run_started, run_completed and the metrics lines
        "lost events": metrics_lines + 2 - counts["events"],
        "lost points": 2 * metrics_lines - series["points"],
        "refused": series["refused"],
        "wrong series": float(points != want_points),
        "lost rows": result.lost_rows,
    }


def flood_lines(lines: int, series_every: int) -> list[list[bytes]]:
    """The flood worker's output for ``lines`` step lines, as the runner's pipe reader hands
    it over: lists of complete lines (one per 1 MiB read)."""
    from mosaic_sdk.runner.supervision.lines import LineSplitter

    buf = io.StringIO()
    real, sys.stdout = sys.stdout, buf
    try:
        flood("alone", lines, 1000, series_every)
    finally:
        sys.stdout = real
    data = buf.getvalue().encode()
    splitter = LineSplitter()
    reads = [splitter.feed(data[i : i + (1 << 20)]) for i in range(0, len(data), 1 << 20)]
    return [r for r in reads if r]


def alone_run(reads: list[list[bytes]], tmp: Path, name: str) -> dict[str, float]:
    """The runner's path in this process: ``reads`` through a RunRecorder into a new store."""
    from mosaic_sdk.runner.recording.recorder import RunRecorder
    from mosaic_sdk.runner.storage.store import RunStore

    store = RunStore(tmp / f"alone-{name}.sqlite")
    try:
        store.create_run("alone", "flood")
        recorder = RunRecorder(store, "alone", "flood", None)
        batcher = recorder.stdout
        total = sum(len(r) for r in reads)
        cpu0, start, own0 = time.process_time(), time.perf_counter(), time.thread_time()
        for lines in reads:
            now = time.monotonic()
            batcher.on_lines(lines, now, False, False)
            batcher.on_pass(now, False)
            batcher.on_check(now)
        batcher.on_pass(time.monotonic(), True)
        recorder.writer.close()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
        own = time.thread_time() - own0  # this thread's: reading, ingest, batching
        lost = recorder.writer.lost_rows
        counts = store.count_rows("alone")
        points = store.series_counts("alone")["points"]
    finally:
        store.close()
    return {
        "lines/s": total / elapsed,
        "us/line": cpu / total * 1e6,
        "ingest us/line": own / total * 1e6,
        # the rest of the process: the store writer's thread (and SQLite's work in it)
        "writer us/line": (cpu - own) / total * 1e6,
        "lost": lost + total - counts["steps"] - counts["events"] - counts["episodes"],
        "points": points,
    }


def alone(args: argparse.Namespace, tmp: Path) -> bool:
    """Part 1: the runner alone, with and without series, alternating (see the docstring)."""
    plain = flood_lines(args.alone_lines, 0)
    series = flood_lines(args.alone_lines, args.series_every)
    want_points = 2 * (args.alone_lines // args.series_every)
    runs: dict[str, list[dict[str, float]]] = {"without series": [], "with series": []}
    for rep in range(args.alone_repeat):
        order = ("without series", "with series")
        for name in order if rep % 2 == 0 else order[::-1]:
            reads = series if name == "with series" else plain
            runs[name].append(alone_run(reads, tmp, f"{rep}-{name.replace(' ', '-')}"))
    base = statistics.median(r["lines/s"] for r in runs["without series"])
    base_cpu = statistics.median(r["us/line"] for r in runs["without series"])
    print(
        f"runner alone (RunRecorder in this process, no worker): {args.alone_lines:,} step "
        f"lines per run; medians of {args.alone_repeat} runs, alternating"
    )
    print(
        f"{'measure':<44} {'lines/s':>10} {'ratio':>6} {'CPU us/line':>12} {'ratio':>6}"
        f" {'ingest':>7} {'writer':>7}"
    )
    for name, rows in runs.items():
        rate = statistics.median(r["lines/s"] for r in rows)
        cpu = statistics.median(r["us/line"] for r in rows)
        ingest = statistics.median(r["ingest us/line"] for r in rows)
        writer = statistics.median(r["writer us/line"] for r in rows)
        label = f"runner alone, {name}" + (" (baseline)" if name == "without series" else "")
        print(
            f"{label:<44} {rate:>10,.0f} {rate / base:>5.2f}x {cpu:>12.2f} {cpu / base_cpu:>5.2f}x"
            f" {ingest:>7.2f} {writer:>7.2f}"
        )
    print(
        "(CPU us/line: the whole process per stored line; ingest: the reading thread's share "
        "(ingest, batching), writer: the rest (the store writer's thread))"
    )
    print(
        "per run (in run order), lines/s: "
        + str({n: [f"{r['lines/s'] / 1000:.1f}k" for r in rows] for n, rows in runs.items()})
    )
    lost = [int(r["lost"]) for rows in runs.values() for r in rows]
    wrong = [int(r["points"]) - want_points for r in runs["with series"]]
    rate = statistics.median(r["lines/s"] for r in runs["with series"])
    print(
        f"rows lost per run: {lost}; points missing per run: {wrong} (goal: all 0); "
        f"goal >= 100,000 lines/s with series: {'met' if rate >= 100_000 else 'NOT met'}\n"
    )
    return all(n == 0 for n in lost + wrong)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=1_000_000, help="step lines per run")
    p.add_argument("--series-every", type=int, default=10, help="step lines per metrics line")
    p.add_argument("--repeat", type=int, default=3, help="end-to-end runs of each kind")
    p.add_argument("--alone-lines", type=int, default=200_000, help="step lines, runner alone")
    p.add_argument("--alone-repeat", type=int, default=5, help="runner-alone runs of each kind")
    p.add_argument("--skip-e2e", action="store_true", help="only the runner alone")
    args = p.parse_args()
    setup_env()
    runs: dict[str, list[dict[str, float]]] = {"without series": [], "with series": []}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["MOSAIC_HOME"] = str(tmp / "home")
        alone_ok = alone(args, tmp)
        if args.skip_e2e:
            return 0 if alone_ok else 1
        for rep in range(args.repeat):
            order = (0, args.series_every) if rep % 2 == 0 else (args.series_every, 0)
            for every in order:
                name = "with series" if every else "without series"
                runs[name].append(one_run(args.lines, every, tmp, rep))
    base = statistics.median(r["lines/s"] for r in runs["without series"])
    print(
        f"ingest with series: {args.lines:,} step lines per run, one metrics line (2 series) "
        f"per {args.series_every} step lines; medians of {args.repeat} runs, alternating ABBA"
    )
    print(f"{'measure':<44} {'lines/s':>10} {'step lines/s':>13} {'us/line':>8} {'ratio':>6}")
    for name, rows in runs.items():
        rate = statistics.median(r["lines/s"] for r in rows)
        steps = statistics.median(r["step lines/s"] for r in rows)
        cpu = statistics.median(r["runner us/line"] for r in rows)
        label = f"mosaic run, {name}" + (" (baseline)" if name == "without series" else "")
        print(f"{label:<44} {rate:>10,.0f} {steps:>13,.0f} {cpu:>8.2f} {rate / base:>5.2f}x")
    per_run = {name: [f"{r['lines/s'] / 1000:.1f}k" for r in rows] for name, rows in runs.items()}
    print(f"per run (in run order), lines/s: {per_run}")
    faults = {
        key: [int(r[key]) for r in runs["with series"]]
        for key in (
            "lost steps",
            "lost events",
            "lost points",
            "refused",
            "wrong series",
            "lost rows",
        )
    }
    print(f"with series, per run: {faults} (goal: all 0)")
    with_series = statistics.median(r["lines/s"] for r in runs["with series"])
    print(
        f"goal >= 100,000 lines/s with series: {'met' if with_series >= 100_000 else 'NOT met'}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    ok = all(v == 0 for values in faults.values() for v in values)
    return 0 if ok and alone_ok else 1


if __name__ == "__main__":
    sys.exit(main())
