"""``mosaic sweep NAME [SPEC] [options]``, ``mosaic sweeps list``, ``mosaic sweeps show SWEEP``."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mosaic_sdk.cli import UsageError
from mosaic_sdk.cli.run import add_place_options
from mosaic_sdk.cli.store_access import (
    add_store_argument,
    format_time,
    open_store,
    print_plain_table,
)
from mosaic_sdk.plugins import PluginError
from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.paths import MosaicHomeError
from mosaic_sdk.runner.storage.store import StoreError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a sweep of trials (hyperparameters x seeds), locally or on Ray",
        description="Run one worker over a search space: every trial is an ordinary run in the "
        "store, tagged with the sweep and its parameters. Ctrl-C cancels every trial; "
        "--resume continues without re-running finished trials.",
    )
    p.add_argument("name", help="worker name (see `mosaic workers list`)")
    p.add_argument(
        "spec",
        nargs="?",
        help="sweep spec file (.json or .toml); optional with --grid/--seeds or --resume",
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="a grid over one config key (repeatable; values are JSON if they parse)",
    )
    p.add_argument("--seeds", metavar="RANGE", help="run every trial for these seeds, e.g. 1-5")
    p.add_argument(
        "--max-trials",
        type=int,
        metavar="N",
        help="refuse a spec that makes more than N trials (default 100000; the spec key "
        "max_trials)",
    )
    p.add_argument(
        "--trial-timeout",
        type=float,
        metavar="S",
        help="stop a trial still running after S seconds (SIGTERM, then SIGKILL after the "
        "grace); it is stored failed, 'timed out after S s' (the spec key trial_timeout)",
    )
    p.add_argument(
        "--trial-stall-after",
        type=float,
        metavar="S",
        help="stop a trial whose worker writes nothing for S seconds, the same way; it is "
        "stored failed, 'stalled: no output for S s ...' (the spec key trial_stall_after)",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: child processes here (default); ray: Ray Tune",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="(ray) the cluster to join, e.g. auto or ray://head:10001; "
        "default: start a local Ray instance",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        metavar="S",
        help="(ray) give up joining the --address cluster after S seconds (default 30)",
    )
    p.add_argument("--resume", metavar="SWEEP", help="continue an interrupted sweep")
    add_place_options(p, "a trial")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=cmd_sweep)

    s = sub.add_parser("sweeps", help="list sweeps, or show one's trials best first")
    ssub = s.add_subparsers(dest="sweeps_command", metavar="SUBCOMMAND")
    lst = ssub.add_parser("list", help="the newest sweeps in the store")
    add_store_argument(lst)
    lst.add_argument("--json", action="store_true", help="print a JSON list")
    unfinished = (
        "rank the trials that did not complete (pruned, stopped, cancelled, failed: their "
        "value is of a run cut short) with the completed ones; the best comes from a "
        "completed trial otherwise"
    )
    lst.add_argument("--include-unfinished", action="store_true", help=unfinished)
    lst.set_defaults(handler=cmd_list)
    show = ssub.add_parser("show", help="the trials of one sweep, best metric first")
    show.add_argument("sweep_id", help="a sweep id, or a unique prefix of one")
    add_store_argument(show)
    show.add_argument("--json", action="store_true", help="print one JSON object")
    show.add_argument("--include-unfinished", action="store_true", help=unfinished)
    show.set_defaults(handler=cmd_show)
    add_store_argument(s)
    s.set_defaults(handler=cmd_list, json=False, include_unfinished=False)


def _raw_spec(args: argparse.Namespace) -> dict[str, Any]:
    from mosaic_sdk.sweeps.spec import apply_shorthands, load_spec  # CLI start-up time

    raw = load_spec(args.spec) if args.spec else {}
    return apply_shorthands(
        raw, args.grid, args.seeds, args.max_trials, args.trial_timeout, args.trial_stall_after
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.sweeps.driver import run_sweep
    from mosaic_sdk.sweeps.spec import SpecError

    if args.max_trials is not None and args.max_trials < 1:
        raise UsageError(
            f"--max-trials {args.max_trials}: give a whole number >= 1, the most trials the "
            "sweep may make (leave it out for the default, 100000)"
        )
    given = any((args.spec, args.grid, args.seeds))
    if args.resume is None and not given:
        raise UsageError("give a sweep spec file, --grid KEY=V1,V2 or --seeds RANGE")
    limits = (args.max_trials, args.trial_timeout, args.trial_stall_after)
    if args.resume is not None and (given or any(v is not None for v in limits)):
        raise UsageError(
            "--resume takes the spec from the store; leave out SPEC, --grid, --seeds, "
            "--max-trials, --trial-timeout, --trial-stall-after"
        )
    if args.engine != "ray" and (args.address is not None or args.connect_timeout is not None):
        raise UsageError("--address and --connect-timeout are for --engine ray")
    if args.connect_timeout is not None and not 0 < args.connect_timeout < float("inf"):
        raise UsageError(f"--connect-timeout {args.connect_timeout:g}: give seconds > 0")
    ray_options = {} if args.connect_timeout is None else {"connect_timeout": args.connect_timeout}
    # a trial's line quotes its worker's stderr, and the spec's metric name: shown, not obeyed
    report = (lambda _msg: None) if args.json else (lambda msg: print(printable(msg), flush=True))
    try:
        result = run_sweep(
            args.name,
            _raw_spec(args) if args.resume is None else {},
            engine=args.engine,
            store=Path(args.store).expanduser() if args.store else None,
            runs_dir=Path(args.runs_dir).expanduser() if args.runs_dir else None,
            address=args.address,
            resume=args.resume,
            grace=args.grace,
            report=report,
            ray_options=ray_options,
        )
    except SpecError as exc:
        lines = "\n  ".join(exc.errors)
        raise UsageError(f"the sweep spec cannot run (nothing was started):\n  {lines}") from None
    except (PluginError, StoreError, MosaicHomeError) as exc:
        raise UsageError(str(exc)) from None
    except RuntimeError as exc:
        from mosaic_sdk.sweeps.ray_engine import ClusterUnreachable  # CLI start-up time

        if not isinstance(exc, ClusterUnreachable):
            raise
        print(printable(f"mosaic sweep: {exc}"), file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        if exc.name == "ray" or (exc.name or "").startswith("ray."):
            raise UsageError(
                "--engine ray needs Ray Tune: pip install 'mosaic-worker-sdk[ray]'"
            ) from None
        raise
    if args.json:
        out = {"sweep_id": result.sweep_id, "status": result.status, "trials": result.trials}
        out["store"] = str(result.store_path)
        print(json.dumps(out, indent=2, sort_keys=True, default=str))
    else:
        counts = Counter(t["status"] for t in result.trials)
        shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        print(
            f"sweep {result.sweep_id} {result.status}: {shown or 'no trials'}; "
            f"inspect: mosaic sweeps show {result.sweep_id} --store {result.store_path}"
        )
    return result.exit_code


def _sweeps(store: Any) -> Any:
    from mosaic_sdk.sweeps.store import SweepStore  # CLI start-up time

    return SweepStore(store)


def _no_sweeps_table(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        try:
            rows = _sweeps(store).list_sweeps(include_unfinished=args.include_unfinished)
        except sqlite3.OperationalError as exc:
            if not _no_sweeps_table(exc):
                raise
            rows = []
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True, default=str))
        return 0
    if not rows:
        print("No sweeps in the store yet; start one with `mosaic sweep NAME SPEC`.")
        return 0
    header = (
        "sweep id",
        "worker",
        "engine",
        "status",
        "created",
        "trials",
        "completed",
        "failed",
        "best",
    )
    table = [
        (
            r["sweep_id"],
            r["worker"],
            r["engine"],
            r["status"],
            format_time(r["created_at"]),
            str(r["trials"]),
            str(r["completed"] or 0),
            str(r["failed"] or 0),
            "-" if r["best"] is None else f"{r['metric']} {r['best']:.4g} ({r['mode']})",
        )
        for r in rows
    ]
    _print_table(header, table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        try:
            sweeps = _sweeps(store)
            sweep = sweeps.get_sweep(args.sweep_id)
            trials = sweeps.trials(sweep["sweep_id"], include_unfinished=args.include_unfinished)
            front = _pareto(sweeps, sweep, trials)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        except sqlite3.OperationalError as exc:
            if not _no_sweeps_table(exc):
                raise
            raise UsageError(f"no sweeps in the store {store.path}") from None
    configs, stats_note = _configurations(sweep, trials)
    if args.json:
        out = {**sweep, "trials": trials}
        if configs is not None:
            out["configurations"] = configs
        if front is not None:
            out["pareto_front"] = front
        print(json.dumps(out, indent=2, sort_keys=True, default=str))
        return 0
    print(
        printable(
            f"sweep {sweep['sweep_id']} of {sweep['worker']} on {sweep['engine']}: "
            f"{sweep['status']}; metric {sweep['metric']} ({sweep['mode']}), best first"
        )
    )
    # A multi-agent worker's trials count games (its agents' episode lines are more).
    games = any(t.get("games") is not None for t in trials)
    played = "games" if games else "episodes"
    header = ("trial", "try", "status", sweep["metric"], played, "node", "params", "run id")
    table = [
        (
            t["trial_key"],
            str(t["attempt"]),
            t["status"],
            "-" if t["metric"] is None else f"{t['metric']:.4g}",
            str(t[played] or 0),
            t["node"] or "-",
            json.dumps(t["params"], sort_keys=True),
            t["run_id"] or "-",
        )
        for t in trials
    ]
    _print_table(header, table)
    if stats_note:
        print(stats_note)
    if front is not None:
        names = [m["name"] for m in sweep["spec"]["metric"]]
        modes = [m.get("mode", "max") for m in sweep["spec"]["metric"]]
        said = ", ".join(f"{n} ({m})" for n, m in zip(names, modes, strict=True))
        print()
        print(
            printable(
                f"Pareto front ({len(front)} trials no other completed trial beats in every "
                f"objective: {said})"
            )
        )
        _print_table(
            ("trial", *names, "params", "run id"),
            [
                (
                    f["trial_key"],
                    *(f"{v:.4g}" for v in f["values"]),
                    json.dumps(f["params"], sort_keys=True),
                    f["run_id"],
                )
                for f in front
            ],
        )
    if configs:
        print(
            "\nby configuration, seeds grouped (completed trials; 95% percentile bootstrap "
            "intervals), best IQM first"
        )
        _print_table(
            ("params", "seeds", "mean [95% CI]", "median [95% CI]", "IQM [95% CI]"),
            [
                (
                    json.dumps(c["params"], sort_keys=True),
                    str(len(c["scores"])),
                    _ci(c["mean"]),
                    _ci(c["median"]),
                    _ci(c["iqm"]),
                )
                for c in configs
            ],
        )
    return 0


def _pareto(
    sweeps: Any, sweep: dict[str, Any], trials: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """The Pareto front of a sweep with several objectives (each completed trial's last
    attempt, its objectives read from its run), or None for one objective."""
    if not isinstance(sweep["spec"].get("metric"), list):
        return None
    # CLI start-up time
    from mosaic_sdk.sweeps.objective import pareto_front
    from mosaic_sdk.sweeps.spec import parse_spec

    objectives = parse_spec({"metric": sweep["spec"]["metric"]}).objectives
    last = {t["trial_key"]: t for t in sorted(trials, key=lambda t: t["attempt"])}
    scored = []
    for t in last.values():
        if t["status"] != "completed" or not t["run_id"]:
            continue
        values = [sweeps.metric_of_run(t["run_id"], m) for m in objectives]
        if all(v is not None for v in values):
            scored.append({**t, "values": values})
    keys = set(
        pareto_front([(t["trial_key"], t["values"]) for t in scored], [m.mode for m in objectives])
    )
    return [t for t in scored if t["trial_key"] in keys]


def _ci(e: dict[str, float]) -> str:
    return f"{e['value']:.4g} [{e['low']:.4g}, {e['high']:.4g}]"


def _configurations(
    sweep: dict[str, Any], trials: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The seeds of each configuration grouped, with mean, median and IQM and their
    intervals (a sweep with several seeds only), best IQM first; or a note saying why not."""
    if len(sweep["spec"].get("seeds") or []) < 2:
        return None, None
    from mosaic_sdk.sweeps.stats import group_by_configuration  # CLI start-up time

    try:
        groups = group_by_configuration(trials)
    except ImportError:  # scipy: the search extra
        return None, (
            "(the seeds of each configuration get intervals with scipy: "
            "pip install 'mosaic-worker-sdk[search]')"
        )
    configs = [
        {
            "params": g["params"],
            "seeds": g["seeds"],
            "scores": g["scores"],
            **{k: e.to_dict() for k, e in g["stats"].items()},
        }
        for g in groups
    ]
    configs.sort(key=lambda c: c["iqm"]["value"], reverse=sweep["mode"] == "max")
    return configs, None


def _print_table(header: tuple[str, ...], table: Sequence[tuple[Any, ...]]) -> None:
    rows = [tuple(printable(v) for v in row) for row in table]
    print_plain_table(tuple(printable(h) for h in header), rows)
    sys.stdout.flush()
