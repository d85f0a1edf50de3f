"""Wall time of a sweep: 16 short trials of the example worker, 2 at a time.

Measured in the same run, on the same machine, each into a store of its own:

- ``shell loop``: a bash ``for`` loop of ``mosaic run`` (one at a time: what a user scripts
  today), and the same loop 2 at a time (``xargs -P 2``);
- ``local``: ``mosaic sweep example SPEC`` (``trials_at_once = 2``);
- ``ray``: ``mosaic sweep example SPEC --engine ray`` (a local Ray instance started and shut
  down by the command: its start-up is in the figure, as a user pays it).

Each configuration runs ``--reps`` times, interleaved; medians are printed with their ratio to
the 2-at-a-time shell loop.

    python benchmarks/sweeps/bench_wall.py [--trials 16] [--reps 3] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = {"episodes": 3, "max_steps_per_episode": 50, "include_observations": False}


def mosaic() -> str:
    return shlex.join([sys.executable, "-m", "mosaic_sdk.cli"])


def shell_loop(tmp: Path, trials: int, parallel: int) -> float:
    store = tmp / f"loop{parallel}-{time.monotonic_ns()}.sqlite"
    sets = " ".join(f"--set {k}={json.dumps(v)}" for k, v in BASE.items())
    run = f"{mosaic()} run example -q --no-preflight --store {store} {sets} --set seed="
    if parallel == 1:
        script = f"for s in $(seq 1 {trials}); do {run}$s >/dev/null; done"
    else:
        script = f"seq 1 {trials} | xargs -P {parallel} -I{{}} sh -c '{run}{{}} >/dev/null'"
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script], check=True)
    return time.perf_counter() - start


def sweep(tmp: Path, trials: int, engine: str) -> float:
    store = tmp / f"{engine}-{time.monotonic_ns()}.sqlite"
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"base": BASE, "seeds": f"1-{trials}", "trials_at_once": 2}))
    env = dict(os.environ)
    if engine == "ray":
        env.setdefault("RAY_AUTH_MODE", "disabled")
        env["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="mb-")
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mosaic_sdk.cli",
            "sweep",
            "example",
            str(spec),
            "--engine",
            engine,
            "--store",
            str(store),
            "--json",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true", help="leave the ray engine out")
    args = parser.parse_args()
    kinds = ["shell loop, 1 at a time", "shell loop, 2 at a time", "local"]
    if not args.no_ray:
        kinds.append("ray")
    times: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["MOSAIC_HOME"] = str(tmp / "home")
        for _ in range(args.reps):
            times["shell loop, 1 at a time"].append(shell_loop(tmp, args.trials, 1))
            times["shell loop, 2 at a time"].append(shell_loop(tmp, args.trials, 2))
            times["local"].append(sweep(tmp, args.trials, "local"))
            if not args.no_ray:
                times["ray"].append(sweep(tmp, args.trials, "ray"))
    ref = statistics.median(times["shell loop, 2 at a time"])
    print(f"{args.trials} trials of the example worker {BASE}:")
    for kind, values in times.items():
        med = statistics.median(values)
        print(
            f"  {kind:26s} {med:7.1f} s  ({med / ref:.2f}x the 2-at-a-time loop; "
            f"{med / args.trials:.2f} s/trial)"
        )
    print(f"(medians of {args.reps}; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
