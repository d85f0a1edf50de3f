"""What the plugin guards (issue 30) cost `mosaic workers list --json`: our code with the probe's
cache warm (the usual case) and cold (the first command after a plugin is installed or
changed), beside the code of a baseline revision without the guards. Target: the warm case
costs what the baseline does.

Each case is a fresh `python -m mosaic_sdk.cli workers list --json` with the installed workers
(example, example_ma, cleanrl), the cases interleaved over ``--runs`` rounds; medians and
ratios are printed. The baseline is ``git archive REV`` of this repository (default ``main``)
unpacked into a temporary directory and put first on PYTHONPATH, with its own plugins.

    python benchmarks/plugins/startup_guard.py [--runs 15] [--baseline-rev main]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def code_path(root: Path) -> str:
    return os.pathsep.join(str(root / p) for p in ("", "plugins/example", "plugins/cleanrl"))


def unpack(rev: str, into: Path) -> Path:
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def once(pythonpath: str, cache: Path, home: Path) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "MOSAIC_PLUGIN_CACHE": str(cache),
        "MOSAIC_HOME": str(home),
    }
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "workers", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    if done.returncode != 0 or '"ok": true' not in done.stdout:
        raise SystemExit(f"workers list failed: {done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline-rev", default="main")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        baseline = unpack(args.baseline_rev, tmp / "baseline")
        home = tmp / "home"
        warm_cache = tmp / "warm.json"
        ours, theirs = code_path(ROOT), code_path(baseline)
        once(ours, warm_cache, home)  # fills the warm cache
        times: dict[str, list[float]] = {"baseline": [], "ours, warm": [], "ours, cold": []}
        for i in range(args.runs):
            times["baseline"].append(once(theirs, tmp / "unused.json", home))
            times["ours, warm"].append(once(ours, warm_cache, home))
            times["ours, cold"].append(once(ours, tmp / f"cold-{i}.json", home))
        base = statistics.median(times["baseline"])
        print(f"mosaic workers list --json, {args.runs} interleaved runs, medians")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:<12} {median * 1000:8.1f} ms   {median / base:5.2f}x baseline")


if __name__ == "__main__":
    main()
