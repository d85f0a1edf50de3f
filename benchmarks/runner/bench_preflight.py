"""What `mosaic run`'s pre-flight (the worker's own --dry-run) costs, for the example worker.

Runs `mosaic run example` (the default config: 5 CartPole episodes) with and without
--no-preflight, alternating, and prints the median wall time of each, their difference and
ratio, and the median time of the dry run alone (`preflight()`), all measured in this run.

    python benchmarks/runner/bench_preflight.py [--repeat 7] [--episodes 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_run(store: Path, episodes: int, *extra: str) -> float:
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", "example", "--quiet"]
    argv += ["--set", f"episodes={episodes}", "--store", str(store), *extra]
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--episodes", type=int, default=5)
    args = parser.parse_args()

    from mosaic_sdk.runner.supervision.preflight import preflight
    from mosaic_sdk.runner.supervisor import resolve_worker

    handle = resolve_worker("example")
    with_check: list[float] = []
    without: list[float] = []
    alone: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "runs.sqlite"
        timed_run(store, 1)  # warm the page cache once
        for _ in range(args.repeat):
            without.append(timed_run(store, args.episodes, "--no-preflight"))
            with_check.append(timed_run(store, args.episodes))
            said = preflight(handle, {"episodes": args.episodes})
            assert said.ok, said.problem
            alone.append(said.seconds)
    med_with, med_without = statistics.median(with_check), statistics.median(without)
    print(f"mosaic run example ({args.episodes} episodes), median of {args.repeat} runs:")
    print(f"  baseline, --no-preflight : {med_without:.3f} s")
    print(f"  with the dry run (default): {med_with:.3f} s")
    print(
        f"  added: {med_with - med_without:+.3f} s (ratio {med_with / med_without:.2f}x); "
        f"the dry run alone: median {statistics.median(alone):.3f} s"
    )


if __name__ == "__main__":
    main()
