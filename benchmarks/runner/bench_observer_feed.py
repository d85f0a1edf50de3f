"""What one no-op observer costs the runner's process, without the worker and SQLite around it.

Builds batches of step rows as ingest does (new tuples each batch, 256 rows, one batch every
``--period`` seconds: 128k rows/s by default) and hands each one to an ``ObserverFeed`` with one
no-op observer, beside the same loop without a feed, alternating, in the same run. Prints the
CPU time of the process per row (all threads: the loop, the observer's thread, the garbage
collector) for each, the difference and the number of garbage collections. ``--interval``
overrides ``DELIVERY_INTERVAL`` to compare delivery periods.

    python benchmarks/runner/bench_observer_feed.py [--batches 1500] [--repeat 5]
        [--interval 0.01 0.05]
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time

from mosaic_sdk import hookimpl
from mosaic_sdk.plugins import create_plugin_manager
from mosaic_sdk.runner.recording import observers
from mosaic_sdk.runner.recording.observers import ObserverFeed
from mosaic_sdk.runner.storage.rows import LineBatch

ROWS = 256


class NoOp:
    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list) -> None:
        pass

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list) -> None:
        pass


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


COLLECTIONS = [0]


def count_collections(phase: str, info: dict) -> None:
    if phase == "stop":
        COLLECTIONS[0] += 1


def one(batches: int, period: float, feed_on: bool) -> tuple[float, int]:
    """CPU microseconds per row, and garbage collections, of one pass."""
    feed = None
    if feed_on:
        pm = create_plugin_manager()
        pm.register(NoOp(), name="noop")
        feed = ObserverFeed.for_plugins(pm, "bench")
    in_flight: list[LineBatch] = []  # the writer's queue keeps a few batches alive too
    COLLECTIONS[0] = 0
    start = cpu()
    for k in range(batches):
        batch = LineBatch()
        base = k * ROWS
        batch.steps = [
            ("bench", n, n, 0, n, 1.0, False, False, 0, f'{{"type":"step","i":{n}}}', None)
            for n in range(base, base + ROWS)
        ]
        in_flight.append(batch)
        if len(in_flight) > 8:
            in_flight.pop(0)
        if feed is not None:
            feed.offer(batch)
        time.sleep(period)
    if feed is not None:
        [report] = feed.close()
        assert report["delivered_steps"] == batches * ROWS, report
    return (cpu() - start) / (batches * ROWS) * 1e6, COLLECTIONS[0]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=1500)
    p.add_argument("--period", type=float, default=0.002, help="seconds between batches")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--interval", type=float, nargs="*", default=[observers.DELIVERY_INTERVAL])
    args = p.parse_args()
    gc.callbacks.append(count_collections)
    rate = ROWS / args.period
    print(
        f"{args.batches} batches of {ROWS} rows, one every {args.period * 1e3:.1f} ms "
        f"(~{rate:,.0f} rows/s), medians of {args.repeat}"
    )
    print(
        f"{'interval':>9} {'no feed us/row':>15} {'no-op observer':>15} {'extra':>8} "
        f"{'GCs (none/obs)':>15}"
    )
    for interval in args.interval:
        observers.DELIVERY_INTERVAL = interval
        base, observed, gcs_base, gcs_obs = [], [], [], []
        for _ in range(args.repeat):
            us, n = one(args.batches, args.period, False)
            base.append(us)
            gcs_base.append(n)
            us, n = one(args.batches, args.period, True)
            observed.append(us)
            gcs_obs.append(n)
        b, o = statistics.median(base), statistics.median(observed)
        print(
            f"{interval * 1e3:>7.0f}ms {b:>15.3f} {o:>15.3f} {o - b:>+8.3f} "
            f"{statistics.median(gcs_base):>7.0f}/{statistics.median(gcs_obs):<7.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
