"""Start-up cost of the telemetry package inside a worker.

Median wall time of ``python -c "import mosaic_sdk.telemetry"`` minus bare ``python -c pass``
(the baseline), over many interleaved runs; beside it, for scale, ``import json`` (what any
JSONL writer pays) and ``import mosaic_sdk.contract`` (pydantic, which the telemetry package
must not pull in). Also lists any heavy module the import drags in.

    python benchmarks/telemetry/bench_startup.py [--runs 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "bare": "pass",
    "json": "import json",
    "telemetry": "import mosaic_sdk.telemetry",
    "contract": "import mosaic_sdk.contract",
}
HEAVY = ("pydantic", "pluggy", "numpy", "gymnasium", "sqlite3", "rich", "dataclasses")


def once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=40)
    args = p.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for code in CASES.values():  # warm the file cache
        once(code)
    for _ in range(args.runs):
        for name, code in CASES.items():  # interleaved, so drifting load hits all alike
            times[name].append(once(code))
    med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
    bare = med["bare"]
    print(f"interpreter start-up with one import, median of {args.runs} interleaved runs")
    print(f"{'command':<44} {'ms':>8} {'above bare':>11} {'ratio':>7} {'goal':>8}")
    for name, goal in (("bare", ""), ("telemetry", "<= 30"), ("json", ""), ("contract", "")):
        total = med[name]
        extra = f"{total - bare:>11.1f}" if name != "bare" else f"{'baseline':>11}"
        cmd = f'python -c "{CASES[name]}"'
        print(f"{cmd:<44} {total:>8.1f} {extra} {total / bare:>6.2f}x {goal:>8}")
    probe = (
        "import sys, mosaic_sdk.telemetry; "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    print(f"heavy modules loaded by import mosaic_sdk.telemetry: {out.stdout.strip() or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
