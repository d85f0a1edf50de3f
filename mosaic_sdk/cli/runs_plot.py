"""``mosaic runs plot RUN... [-o FILE]``: learning curves of stored runs as PNG or SVG;
``--metric NAME_OR_GLOB`` (repeatable): their series instead, one panel per series name."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from typing import Any

from mosaic_sdk.cli import UsageError, print_warning, usage_errors
from mosaic_sdk.cli.store_access import open_store
from mosaic_sdk.extras import MissingExtraError
from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.store import StoreError

DEFAULT_OUTPUT = "learning-curves.png"


def register(rsub: Any, store_arg: Any) -> None:
    """Add ``plot`` to the ``mosaic runs`` sub-commands."""
    p = rsub.add_parser(
        "plot",
        help="learning curves of one or more runs as PNG or SVG (needs the plot extra)",
        description="Draw the episode returns of stored runs (read-only) into a PNG or SVG "
        "file, by its suffix. Needs matplotlib: pip install 'mosaic-worker-sdk[plot]'.",
    )
    p.add_argument("run_ids", nargs="*", metavar="RUN", help="run ids or unique prefixes")
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="NAME_OR_GLOB",
        help="draw the runs' series of this name instead of the returns, one panel per series "
        "name (repeatable; a glob such as 'losses/*'; see `mosaic runs show RUN` for the "
        "names); x is the series' step (--x steps) or wall time (--x time)",
    )
    p.add_argument(
        "--sweep",
        metavar="SWEEP",
        help="plot the trials of this sweep (id or unique prefix; the last attempt of each "
        "trial that stored episodes), grouped by their parameters apart from seed: a mean line "
        "and band per parameter set",
    )
    p.add_argument(
        "-o",
        "--output",
        default=DEFAULT_OUTPUT,
        metavar="FILE",
        help=f"a .png or .svg file (default {DEFAULT_OUTPUT})",
    )
    store_arg(p)
    p.add_argument(
        "--smooth",
        type=int,
        default=1,
        metavar="N",
        help="moving average over N episodes, drawn over the raw returns (default 1: none)",
    )
    p.add_argument(
        "--x",
        dest="x_axis",
        choices=("steps", "episodes", "time"),
        default="steps",
        help="x axis: env steps (default), episodes, or wall time in seconds",
    )
    p.add_argument(
        "--group-seeds",
        action="store_true",
        help="runs of one worker whose configs differ only by seed become one mean line "
        "with a band",
    )
    p.add_argument(
        "--by-agent",
        action=argparse.BooleanOptionalAction,
        help="a multi-agent run as one curve per agent_id (with --group-seeds: one band per "
        "agent); the default for runs with several agents. --no-by-agent draws the episodes "
        "of all agents as one curve; at most 20 agents a run, those with the most episodes",
    )
    p.add_argument(
        "--spread",
        choices=("minmax", "std"),
        default="minmax",
        help="the band of --group-seeds: min to max (default) or mean +- std",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="KEY",
        help="with --group-seeds, also ignore this config key (repeatable; seed and run_id "
        "always are)",
    )
    p.add_argument("--title", help="a title above the chart")
    p.add_argument(
        "--include-unfinished",
        action="store_true",
        help="draw the episodes the run's end cut off (unfinished) too: their partial "
        "returns are left out otherwise",
    )
    p.set_defaults(handler=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.plots.curves import CurveError, skipped_text
    from mosaic_sdk.plots.figure import plot_format, plot_runs, require_matplotlib
    from mosaic_sdk.plots.groups import DEFAULT_IGNORED

    with usage_errors(ValueError, MissingExtraError):
        plot_format(args.output)  # before opening anything: a wrong name costs nothing
        require_matplotlib()
    if args.smooth < 1:
        raise UsageError(f"--smooth {args.smooth}: use 1 (no smoothing) or more episodes")
    if not args.run_ids and not args.sweep:
        raise UsageError("name the runs to plot (RUN...), or a sweep with --sweep SWEEP")
    if args.metric and args.x_axis == "episodes":
        raise UsageError("--x episodes is for returns; a series is drawn against --x steps or time")
    with open_store(args) as store:
        run_ids = list(args.run_ids)
        group_seeds = args.group_seeds
        if args.sweep:
            run_ids += _sweep_runs(store, args.sweep)
            group_seeds = True
        if args.metric:
            return _plot_metrics(args, store, run_ids, group_seeds)
        with usage_errors(StoreError, CurveError, ValueError, writing=args.output):
            result = plot_runs(
                store,
                run_ids,
                args.output,
                x_axis=args.x_axis,
                window=args.smooth,
                group_seeds=group_seeds,
                by_agent=args.by_agent,
                spread=args.spread,
                ignore=(*DEFAULT_IGNORED, *args.ignore),
                title=args.title,
                include_unfinished=args.include_unfinished,
            )
    for run_id, skipped in result.skipped.items():  # on the figure too, in the legend
        print_warning(f"run {run_id}: {skipped_text(skipped)}; not on its curve")
    _say_agents(result)
    for run_id, (drawn, agents) in result.agents_left_out.items():
        print_warning(
            f"run {run_id}: {agents - drawn} of its {agents} agents are not drawn (at most "
            f"{drawn} per run: those with the most episodes; see them all with `mosaic runs show`)"
        )
    lines = len(result.series)
    if args.sweep:
        print(f"sweep {args.sweep}: {len(run_ids)} trial run(s), grouped apart from seed")
    print(
        f"wrote {result.path} ({result.runs} run{'s' if result.runs != 1 else ''}, "
        f"{lines} curve{'s' if lines != 1 else ''}, x = {args.x_axis})"
    )
    return 0


def _say_agents(result: Any) -> None:
    """Tell how the runs with several agents were drawn, on stderr (stdout says what was
    written)."""
    for run_id, agents in result.multi_agent.items():
        names = ", ".join(agents)
        total = result.agents_left_out.get(run_id, (0, len(agents)))[1]
        if total > len(agents):
            names += f", ... ({total - len(agents)} more)"
        if result.split_by_agent:
            text = (
                f"mosaic: note: run {run_id} has {total} agents ({names}): one curve "
                "per agent (--no-by-agent draws them as one)"
            )
        else:
            text = (
                f"mosaic: note: run {run_id} has {total} agents ({names}), drawn as one "
                "curve of all their episodes (in a zero-sum game their returns cancel); "
                "--by-agent draws one per agent"
            )
        print(printable(text), file=sys.stderr, flush=True)


def _plot_metrics(
    args: argparse.Namespace, store: Any, run_ids: list[str], group_seeds: bool
) -> int:
    # CLI start-up time
    from mosaic_sdk.plots.curves import CurveError
    from mosaic_sdk.plots.groups import DEFAULT_IGNORED
    from mosaic_sdk.plots.metrics import plot_metrics

    with usage_errors(StoreError, CurveError, ValueError, writing=args.output):
        result = plot_metrics(
            store,
            run_ids,
            args.metric,
            args.output,
            x_axis="step" if args.x_axis == "steps" else "time",
            window=args.smooth,
            group_seeds=group_seeds,
            spread=args.spread,
            ignore=(*DEFAULT_IGNORED, *args.ignore),
            title=args.title,
        )
    for name, n in result.not_finite.items():
        print_warning(f"series {name}: {n} NaN/inf point(s) not drawn")
    for why in result.skipped.values():
        print_warning(f"{why}: not drawn (the other series are)")
    for name, unit in result.units.items():
        print(
            printable(f"mosaic: note: series {name} reaches {unit:g}: drawn in units of {unit:g}"),
            file=sys.stderr,
            flush=True,
        )
    panels = len(result.panels)
    print(
        f"wrote {result.path} ({panels} panel{'s' if panels != 1 else ''}, "
        f"{result.lines} line{'s' if result.lines != 1 else ''}, x = {args.x_axis})"
    )
    return 0


def _sweep_runs(store: Any, sweep: str) -> list[str]:
    """The run of the last attempt of each trial of ``sweep`` that stored episodes."""
    from mosaic_sdk.sweeps.store import SweepStore  # CLI start-up time

    try:
        attempts = SweepStore(store).trials(sweep)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    except sqlite3.OperationalError:  # a store no sweep has written (no sweeps table)
        raise UsageError(f"no sweep {sweep!r} in this store: it holds no sweeps") from None
    last = {t["trial_key"]: t for t in sorted(attempts, key=lambda t: t["attempt"])}
    runs = [r["run_id"] for r in last.values() if r["run_id"] and (r["episodes"] or 0) > 0]
    if not runs:
        raise UsageError(f"sweep {sweep!r} has no trial with stored episodes yet")
    return runs
