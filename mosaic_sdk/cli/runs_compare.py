"""``mosaic runs compare A B``: the probability that the runs of A beat those of B, with its
interval (mosaic_sdk.sweeps.stats). A and B are each a run id (or unique prefix), a glob over
run ids (``01KB*``), or a sweep id (its completed trials)."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sqlite3
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.cli.store_access import open_store
from mosaic_sdk.extras import MissingExtraError
from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.store import StoreError


def register(rsub: Any, store_arg: Any) -> None:
    p = rsub.add_parser(
        "compare", help="P(A beats B) with its 95%% interval: runs, globs of run ids, or sweeps"
    )
    p.add_argument("a", help="a run id or prefix, a glob of run ids (quote it), or a sweep id")
    p.add_argument("b", help="the same, for the other side")
    p.add_argument(
        "--metric",
        help="episode field (return, steps) or series name; default: the sweep's metric, "
        "else return",
    )
    p.add_argument("--last", type=int, help="N of --reduce last_mean (default 10)")
    p.add_argument("--reduce", choices=("last_mean", "best", "mean", "auc"))
    p.add_argument("--agent", help="one agent's episodes or series")
    p.add_argument("--mode", choices=("max", "min"), help="higher (max) or lower is better")
    p.add_argument(
        "--profile",
        metavar="FILE",
        help="also draw both sides' performance profiles to FILE (.png or .svg; the plot extra)",
    )
    store_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_compare)


def _select(store: Any, text: str) -> tuple[list[str], dict[str, Any] | None, str]:
    """The run ids ``text`` names, the sweep's stored metric when it names a sweep, and how it
    was read."""
    from mosaic_sdk.sweeps.store import DamagedSweepError, SweepStore  # CLI start-up time

    if any(c in text for c in "*?["):
        matched = [i for i in store.run_ids() if fnmatch.fnmatchcase(i, text)]
        if not matched:
            raise UsageError(f"no run id matches {text!r}; see `mosaic runs list`")
        return matched, None, f"{len(matched)} runs matching {text}"
    try:
        sweeps = SweepStore(store)
        sweep = sweeps.get_sweep(text)
        trials = sorted(sweeps.trials(sweep["sweep_id"]), key=lambda t: t["attempt"])
    except DamagedSweepError as exc:  # a sweep it names, that cannot be read: say so
        raise UsageError(str(exc)) from None
    except (StoreError, sqlite3.OperationalError):
        sweep = None
    if sweep is not None:
        last = {t["trial_key"]: t for t in trials}
        ids = [t["run_id"] for t in last.values() if t["status"] == "completed"]
        if not ids:
            raise UsageError(f"sweep {sweep['sweep_id']} has no completed trial to compare")
        metric = sweep["spec"].get("metric")
        if isinstance(metric, list):  # several objectives: the first ranks the trials
            metric = metric[0]
        return ids, metric, f"sweep {sweep['sweep_id']}"
    try:
        run_id = store.resolve(text)
    except StoreError:
        raise UsageError(
            f"{text!r} is no run id, glob of run ids or sweep id in the store {store.path}"
        ) from None
    return [run_id], None, f"run {run_id}"


def cmd_compare(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.sweeps.objective import metric_of_run
    from mosaic_sdk.sweeps.spec import SpecError, parse_spec
    from mosaic_sdk.sweeps.stats import prob_improvement, summarize

    with open_store(args) as store:
        ids_a, metric_a, what_a = _select(store, args.a)
        ids_b, metric_b, what_b = _select(store, args.b)
        raw: dict[str, Any] = dict(metric_a or metric_b or {})
        given = {
            "name": args.metric,
            "last": args.last,
            "reduce": args.reduce,
            "agent": args.agent,
            "mode": args.mode,
        }
        if args.metric is not None:  # another metric: the sweep's reduce/agent do not apply
            raw = {}
        raw.update({k: v for k, v in given.items() if v is not None})
        try:
            metric = parse_spec({"metric": raw}).metric
        except SpecError as exc:
            raise UsageError("; ".join(exc.errors)) from None
        scores: list[list[float]] = []
        for ids in (ids_a, ids_b):  # one number a run: a run's points are not kept
            scores.append([v for i in ids if (v := metric_of_run(store, i, metric)) is not None])
    for what, s in zip((what_a, what_b), scores, strict=True):
        if not s:
            raise UsageError(f"{what}: no run has a value of {metric.describe()}")
    sign = 1.0 if metric.mode == "max" else -1.0
    try:
        p = prob_improvement([sign * v for v in scores[0]], [sign * v for v in scores[1]])
        sides = [summarize(s) for s in scores]
    except ImportError:
        raise UsageError(
            "runs compare needs scipy: pip install 'mosaic-worker-sdk[search]'"
        ) from None
    if args.profile:
        from mosaic_sdk.plots.profiles import plot_profiles  # CLI start-up time

        shown = [s if metric.mode == "max" else [-v for v in s] for s in scores]
        with usage_errors(ValueError, MissingExtraError):
            plot_profiles(
                {f"A: {what_a}": shown[0], f"B: {what_b}": shown[1]},
                args.profile,
                xlabel=metric.name if metric.mode == "max" else f"-{metric.name} (lower is better)",
            )
    interval = _interval(len(scores[0]), len(scores[1]))
    if args.json:
        out = {
            "metric": metric.to_dict(),
            "p_a_beats_b": p.to_dict(),
            "interval": interval,
            **{
                side: {
                    "what": what,
                    "n": len(s),
                    "scores": s,
                    "iqm": st["iqm"].to_dict(),
                    "interval": _side_interval(len(s)),
                }
                for side, what, s, st in zip("ab", (what_a, what_b), scores, sides, strict=True)
            },
        }
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    print(printable(f"metric: {metric.describe()}"))  # a series name, shown not obeyed
    for side, what, s, st in zip("AB", (what_a, what_b), scores, sides, strict=True):
        if len(s) == 1:
            said = (
                f"{side}: {what}: 1 score, IQM {st['iqm'].value:.4g}, mean "
                f"{st['mean'].value:.4g} ({_side_interval(1)})"
            )
        else:
            said = (
                f"{side}: {what}: {len(s)} scores, IQM {st['iqm'].text()}, mean {st['mean'].text()}"
            )
        print(printable(said))
    better = "higher" if metric.mode == "max" else "lower"
    said = f"{p.value:.3g}" if len(scores[0]) == len(scores[1]) == 1 else p.text(".3g")
    print(f"P(A beats B) = {said} ({interval}; a {better} score beats)")
    if args.profile:
        print(f"performance profiles: {args.profile}")
    return 0


def _interval(a: int, b: int) -> str:
    """What the interval of P(A beats B) is, for ``a`` and ``b`` scores a side."""
    if a == 1 and b == 1:
        return (
            "no interval: one run a side, nothing to resample; compare several runs a side "
            "(seeds) for one"
        )
    if a == 1 or b == 1:
        one, other = ("A", "B") if a == 1 else ("B", "A")
        return f"95% bootstrap interval of {other}'s runs only: {one} has one run"
    return "95% bootstrap interval"


def _side_interval(n: int) -> str:
    """What the intervals of one side's IQM and mean are, for ``n`` scores."""
    return "one score: no interval" if n == 1 else "95% bootstrap interval"
