"""The local engine's search (mosaic_sdk.sweeps.search): how close it gets, and what it costs.

1. ``quality``: a sweep of the bowl worker's function (tests/plugin_fixtures/bowl_worker.py:
   best value 0 at x = 0.7, y = 0.2; two uniform keys in [0, 1]) with ``--trials`` parameter
   sets (40), for each of ``--seeds`` sampler seeds (5): the distance of the best trial's value
   to the optimum, median over the seeds, TPE beside random search (the baseline). The trials
   go through the engine's own source (``OptunaSource.next`` / ``finished``) with the bowl's
   value computed in process: the worker adds only time.
   ``--end-to-end`` runs real sweeps of the bowl worker instead (``run_sweep``, 1 episode per
   trial; minutes).
2. ``overhead``: ``--overhead-trials`` (1,000) trials of TPE through the same source: the
   sampler's suggestion and the bookkeeping per trial (the sweep's rows are stored by the
   engine as for every sampler), median over the whole
   run and over the last 100, beside random search and the grid's plain list (baselines).

    python benchmarks/sweeps/bench_search.py [--trials 40] [--seeds 5] [--overhead-trials 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
FIXTURES = HERE.parents[2] / "tests" / "plugin_fixtures"
sys.path.insert(0, str(FIXTURES))

from bowl_worker import value  # noqa: E402

from mosaic_sdk.sweeps.local import ListSource  # noqa: E402
from mosaic_sdk.sweeps.search import OptunaSource  # noqa: E402
from mosaic_sdk.sweeps.spec import expand_trials, parse_spec  # noqa: E402

SPACE = {"x": {"uniform": [0.0, 1.0]}, "y": {"uniform": [0.0, 1.0]}}


def best_direct(sampler: str, trials: int, seed: int, tmp: Path) -> float:
    spec = parse_spec({"space": SPACE, "samples": trials, "sampler": sampler, "sample_seed": seed})
    source = OptunaSource(spec, sampler)
    best = float("-inf")
    while (trial := source.next()) is not None:
        v = value(trial.params["x"], trial.params["y"])
        best = max(best, v)
        source.finished(trial.key, "completed", v)
    return best


def best_end_to_end(sampler: str, trials: int, seed: int, tmp: Path) -> float:
    from mosaic_sdk.sweeps.driver import run_sweep

    os.environ["MOSAIC_PLUGINS"] = "bowl=bowl_worker:Bowl"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(FIXTURES), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    raw = {
        "base": {"episodes": 1},
        "space": SPACE,
        "samples": trials,
        "sampler": sampler,
        "sample_seed": seed,
        "trials_at_once": 2,
    }
    result = run_sweep(
        "bowl", raw, store=tmp / f"e-{sampler}-{seed}.sqlite", report=lambda _m: None
    )
    return max(t["metric"] for t in result.trials if t["metric"] is not None)


def per_trial_ms(source: ListSource | OptunaSource) -> list[float]:
    times: list[float] = []
    while True:
        t0 = time.perf_counter()
        trial = source.next()
        if trial is None:
            return times
        v = value(trial.params["x"], trial.params["y"])
        source.finished(trial.key, "completed", v)
        times.append((time.perf_counter() - t0) * 1000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--overhead-trials", type=int, default=1000)
    ap.add_argument("--end-to-end", action="store_true")
    args = ap.parse_args()
    best = best_end_to_end if args.end_to_end else best_direct
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        gaps: dict[str, list[float]] = {"tpe": [], "random": []}
        for seed in range(args.seeds):
            for sampler in gaps:  # interleaved
                gaps[sampler].append(0.0 - best(sampler, args.trials, seed, tmp))
        print(
            f"quality: {args.trials} trials, {args.seeds} sampler seeds, distance of the best "
            f"value to the optimum (0){' end to end' if args.end_to_end else ''}"
        )
        for sampler, g in gaps.items():
            shown = [round(x, 4) for x in g]
            print(f"  {sampler:7s} median {statistics.median(g):.4f}  per seed {shown}")
        tpe, rnd = statistics.median(gaps["tpe"]), statistics.median(gaps["random"])
        verdict = "TPE closer" if tpe < rnd else "TPE NOT closer"
        print(f"  tpe / random (median distance): {tpe / rnd:.3f}  ({verdict})")

        n = args.overhead_trials
        raw = {"space": SPACE, "samples": n}
        rows = {}
        for sampler in ("tpe", "random"):
            spec = parse_spec({**raw, "sampler": sampler})
            rows[sampler] = per_trial_ms(OptunaSource(spec, sampler))
        rows["grid list"] = per_trial_ms(
            ListSource(expand_trials(parse_spec({**raw, "sampler": "grid"})))
        )
        print(f"overhead: {n} trials, ms per trial (suggestion + bookkeeping)")
        for name, t in rows.items():
            print(
                f"  {name:9s} median {statistics.median(t):7.3f}  last 100 median "
                f"{statistics.median(t[-100:]):7.3f}  max {max(t):7.2f}  "
                f"total {sum(t) / 1000:6.2f} s"
            )
        goal = statistics.median(rows["tpe"][-100:])
        under = "under" if goal < 50 else "OVER"
        print(f"  tpe at {n} trials: {goal:.2f} ms per trial ({under} the 50 ms goal)")


if __name__ == "__main__":
    main()
