"""Wall time of the whole conformance suite on a worker, beside the one-launch-per-check way.

    python benchmarks/conformance/suite_duration.py [--worker example] [--repeat 3]
        [--baseline-repeat 1] [--skip-baseline]

"ours" is ``mosaic conformance WORKER`` as a user runs it (a fresh process; median over
``--repeat`` runs): runs are recorded once, two at a time, and shared by all checks.
"baseline" runs the same checks the way per-worker copied tests do: every check gets a fresh
subject and records the runs it reads itself, one launch at a time (median over
``--baseline-repeat``). Both include the packaging check's wheel build. The target for the
example worker is about 20 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def ours(worker: str) -> tuple[float, int]:
    mosaic = Path(sys.executable).with_name("mosaic")
    argv = [str(mosaic)] if mosaic.exists() else [sys.executable, "-m", "mosaic_sdk.cli"]
    started = time.perf_counter()
    done = subprocess.run([*argv, "conformance", worker], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"mosaic conformance failed to run: {done.stderr.strip()}")
    return elapsed, done.returncode


def baseline(worker: str) -> tuple[float, int]:
    from mosaic_sdk.conformance import all_checks, run_check
    from mosaic_sdk.conformance.subject import WorkerSubject

    launches = 0
    started = time.perf_counter()
    for check in all_checks():
        with WorkerSubject(worker) as subject:
            kinds = subject.planned_runs([check])
            subject.ensure_runs(kinds, parallel=1)
            launches += len(kinds)
            run_check(subject, check)
    return time.perf_counter() - started, launches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", default="example")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-repeat", type=int, default=1)
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()

    ours_times = []
    for _ in range(args.repeat):
        elapsed, code = ours(args.worker)
        ours_times.append(elapsed)
    ours_median = statistics.median(ours_times)
    print(f"worker {args.worker!r} (exit code of the last run: {code})")
    print(f"{'variant':<10} {'median s':>9} {'runs':>5}  all (s)")
    print(
        f"{'ours':<10} {ours_median:>9.2f} {len(ours_times):>5}  "
        + " ".join(f"{t:.2f}" for t in ours_times)
    )
    if args.skip_baseline:
        return
    base_times, launches = [], 0
    for _ in range(args.baseline_repeat):
        elapsed, launches = baseline(args.worker)
        base_times.append(elapsed)
    base_median = statistics.median(base_times)
    print(
        f"{'baseline':<10} {base_median:>9.2f} {len(base_times):>5}  "
        + " ".join(f"{t:.2f}" for t in base_times)
        + f"  ({launches} launches)"
    )
    print(f"ratio baseline/ours: {base_median / ours_median:.1f}x")


if __name__ == "__main__":
    main()
