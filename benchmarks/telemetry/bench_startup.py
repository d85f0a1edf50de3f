"""Start-up cost of the telemetry package inside a worker.

Median wall time of ``python -c "import mosaic_sdk.telemetry"`` minus bare ``python -c pass``,
over many alternating runs; beside it, for scale, the cost of ``import json`` (what any JSONL
writer pays) and of ``import mosaic_sdk.contract`` (pydantic, which the telemetry package must
not pull in). Also lists any heavy module the import drags in.

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
    print(f"import cost above bare `python -c pass` ({bare:.1f} ms), median of {args.runs} runs")
    print(f"{'import':<34} {'ms':>8} {'ratio to json':>14} {'goal':>8}")
    json_cost = max(med["json"] - bare, 1e-3)
    for name, goal in (("telemetry", "<= 30"), ("json", ""), ("contract", "")):
        cost = med[name] - bare
        print(f"{CASES[name]:<34} {cost:>8.1f} {cost / json_cost:>13.1f}x {goal:>8}")
    probe = (
        "import sys, mosaic_sdk.telemetry; "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    print(f"heavy modules loaded by import mosaic_sdk.telemetry: {out.stdout.strip() or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
