"""Start-up cost of the gym_gui stand-in's launcher for upstream-style workers.

``mosaic run`` starts an upstream-style worker as ``python -m mosaic_sdk.plugins.gym_gui_stand_in
PKG.cli ...`` instead of ``python -m PKG.cli ...`` (the baseline: what the platform runs).
Median wall time over many interleaved runs of:

- the baseline, with a worker module that does nothing;
- the launcher running the same module (the launcher's own cost);
- the launcher running a module that imports ``gym_gui.core.worker`` (plus the stand-in);
- for scale, the launcher after an import of the plugin framework (pluggy, pydantic): what
  every worker would pay if ``mosaic_sdk.plugins`` imported its modules eagerly.

    python benchmarks/plugins/launcher_startup.py [--runs 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAUNCHER = "mosaic_sdk.plugins.gym_gui_stand_in"
EAGER = (
    "import mosaic_sdk.plugins.discovery, runpy, sys; "
    "sys.argv[1:] = ['empty_pkg.cli']; "
    f"runpy.run_module('{LAUNCHER}', run_name='__main__')"
)


def once(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=cwd, env=env)
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=40)
    args = p.parse_args()
    py = sys.executable
    cases = {
        "python -m empty_pkg.cli (baseline)": [py, "-m", "empty_pkg.cli"],
        "launcher, empty_pkg.cli": [py, "-m", LAUNCHER, "empty_pkg.cli"],
        "launcher, gui_pkg.cli (stand-in import)": [py, "-m", LAUNCHER, "gui_pkg.cli"],
        "eager plugin framework + launcher": [py, "-c", EAGER],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in (("empty_pkg", ""), ("gui_pkg", "import gym_gui.core.worker\n")):
            (Path(tmp) / name).mkdir()
            (Path(tmp) / name / "__init__.py").write_text("")
            (Path(tmp) / name / "cli.py").write_text(body)
        env = {**os.environ, "PYTHONPATH": tmp}
        times: dict[str, list[float]] = {name: [] for name in cases}
        for argv in cases.values():  # warm the file cache
            once(argv, tmp, env)
        for _ in range(args.runs):
            for name, argv in cases.items():  # interleaved, so drifting load hits all alike
                times[name].append(once(argv, tmp, env))
    med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
    bare = med["python -m empty_pkg.cli (baseline)"]
    print(f"worker start-up, median of {args.runs} interleaved runs")
    print(f"{'command':<42} {'ms':>8} {'above baseline':>15} {'ratio':>7}")
    for name, total in med.items():
        extra = "baseline" if name.endswith("(baseline)") else f"{total - bare:.1f}"
        print(f"{name:<42} {total:>8.1f} {extra:>15} {total / bare:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
