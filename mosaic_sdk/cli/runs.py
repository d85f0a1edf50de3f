"""``mosaic runs list [--json]`` and ``mosaic runs show RUN_ID [--json]``: what the store holds."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mosaic_sdk.analytics import AGENT_RETURNS, ANALYTICS_FILE, AnalyticsError, read_analytics
from mosaic_sdk.cli import runs_compare, runs_export, runs_plot, usage_errors
from mosaic_sdk.cli.store_access import (
    add_store_argument,
    format_time,
    open_store,
    print_plain_table,
)
from mosaic_sdk.exit_status import exit_status
from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.metrics import RunMetrics, format_value, run_metrics
from mosaic_sdk.runner.storage.store import StoreError, status_text

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.records import (
        AgentSummary,
        JsonValue,
        ObserverRecord,
        RunCounts,
        SeriesCounts,
        SeriesInfo,
    )


def register(sub: Any) -> None:
    p = sub.add_parser("runs", help="list stored runs, show, plot or export them")
    rsub = p.add_subparsers(dest="runs_command", metavar="SUBCOMMAND")
    lst = rsub.add_parser("list", help="the newest runs in the store")
    add_store_argument(lst)
    lst.add_argument("--limit", type=int, default=20, help="how many runs (default 20; 0: all)")
    lst.add_argument("--worker", help="only runs of this worker")
    lst.add_argument("--json", action="store_true", help="print a JSON list")
    lst.set_defaults(handler=cmd_list)
    show = rsub.add_parser("show", help="summary and last events of one run")
    show.add_argument("run_id", help="a run id, or a unique prefix of one")
    add_store_argument(show)
    show.add_argument("--events", type=int, default=10, help="how many last events (default 10)")
    show.add_argument("--logs", type=int, default=10, help="how many last log lines (default 10)")
    show.add_argument("--json", action="store_true", help="print one JSON object")
    show.set_defaults(handler=cmd_show)
    runs_plot.register(rsub, add_store_argument)
    runs_export.register(rsub, add_store_argument)
    runs_compare.register(rsub, add_store_argument)
    add_store_argument(p)
    p.set_defaults(handler=cmd_list, json=False, limit=20, worker=None)


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        runs = store.list_runs(limit=args.limit or None, worker=args.worker)
    if args.json:
        print(json.dumps(runs, indent=2, sort_keys=True, default=str))
        return 0
    if not runs and args.worker:
        print(
            f"No runs of worker {printable(args.worker)!r} in the store; "
            "`mosaic runs list` shows them all."
        )
        return 0
    if not runs:
        print("No runs in the store yet; start one with `mosaic run NAME`.")
        return 0
    header = (
        "run id",
        "worker",
        "status",
        "started",
        "duration",
        "env steps",
        "step lines",
        "episodes",
    )
    table = [
        (
            r["run_id"],
            r["worker"],
            status_text(r),
            format_time(r["started_at"]),
            f"{r['duration_seconds']:.1f}s",
            str(r["counts"]["env_steps"]),
            str(r["counts"]["step_lines"]),
            _episodes_text(r["counts"]),
        )
        for r in runs
    ]
    shown = [tuple(printable(v) for v in row) for row in table]
    if sys.stdout.isatty():
        # CLI start-up time
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        rich_table = Table(title_justify="left")
        for col in header:
            numeric = col in ("env steps", "step lines", "episodes")
            rich_table.add_column(col, justify="right" if numeric else "left", no_wrap=True)
        for shown_row in shown:
            rich_table.add_row(*(Text(v) for v in shown_row))  # Text: never read as markup
        Console(highlight=False).print(rich_table)
        return 0
    print_plain_table(header, shown)
    return 0


def _episodes_text(c: RunCounts) -> str:
    """``5`` (finished episodes), or ``2 games (4 agent episodes)`` for a multi-agent run;
    ``, 1 unfinished (...)`` after it when the run's end cut episodes off."""
    if c.get("games") is not None:
        text = f"{c['games']} games ({c['agent_episodes']} agent episodes)"
    else:
        text = str(c["episodes"])
    cut = c.get("unfinished_episodes") or 0
    if cut:
        text += f", {cut} unfinished (cut off by the run's end: in no count or return)"
    return text


def cmd_show(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        with usage_errors(StoreError):
            run = store.get_run(args.run_id)
        events = store.events(run["run_id"], limit=max(args.events, 0))
        logs = store.log_lines(run["run_id"], limit=max(args.logs, 0))
        replies = store.count_log_lines(run["run_id"], "control_reply")
        metrics = run_metrics(store, run["run_id"])
        agents = store.agents(run["run_id"])
        series = store.series(run["run_id"])
        series_counts = store.series_counts(run["run_id"])
    manifest, manifest_error = _analytics(run["run_dir"])
    if args.json:
        report: dict[str, object] = dict(run)
        report["last_events"] = events
        report["last_log_lines"] = logs
        report["analytics"] = manifest
        report["analytics_error"] = manifest_error
        report["metrics"] = metrics
        report["agents"] = agents
        report["series"] = [_series_json(info) for info in series]
        report["series_counts"] = series_counts
        if run["status"] == "running" and run["runner_alive"] is False:
            report["note"] = "runner died"
        print(json.dumps(report, indent=2, sort_keys=True, default=str))
        return 0
    c, last = run["counts"], run["last_episode_return"]
    summed = "" if c.get("games") is None else " (summed over the agents; per agent below)"
    rows = [
        ("run", run["run_id"]),
        ("worker", run["worker"]),
        ("status", status_text(run)),
        ("exit code", "-" if run["exit_code"] is None else exit_status(run["exit_code"])),
        ("error", run["error"] or "-"),
        ("started", format_time(run["started_at"])),
        ("ended", format_time(run["ended_at"])),
        ("duration", f"{run['duration_seconds']:.1f}s"),
        ("env steps", str(c["env_steps"]) + summed),
        ("step lines", str(c["step_lines"])),
        ("episodes", _episodes_text(c)),
        ("last return", "-" if last is None else "per agent below" if agents else f"{last:.3f}"),
        ("events", str(c["events"])),
        (
            "log lines",
            f"{c['log_lines']} ({c['invalid_lines']} invalid, {c['stderr_lines']} from stderr"
            + (f", {replies} control replies)" if replies else ")"),
        ),
        ("run dir", run["run_dir"] or "-"),
        ("stderr", run["stderr_path"] or "-"),
    ]
    rows.extend(_observer_rows(run["observers"]))
    rows.extend(_analytics_rows(manifest, manifest_error))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:>{width}}  {printable(value)}")
    _print_metrics(metrics)
    _print_series(series, series_counts)
    _print_agents(agents)
    if events:
        print(f"\nlast {len(events)} event(s):")
        for e in events:
            flag = " (synthesised by mosaic run)" if e["synthesised"] else ""
            name, payload = printable(e["event"]), printable(_short(e["payload_json"]))
            print(f"  #{e['line_no']:<7} {name}{flag}  {payload}")
    if logs:
        print(f"\nlast {len(logs)} log line(s):")
        for line in logs:
            kind = line["kind"] if line["kind"] in ("invalid", "control_reply") else None
            tag = printable(line["stream"]) + (f" {kind}" if kind else "")
            tag += " partial" if line["partial"] else ""
            print(f"  [{tag}] {printable(line['text'][:200])}")
    return 0


def _observer_rows(reports: list[ObserverRecord]) -> list[tuple[str, str]]:
    """One row per observer plugin that missed rows or failed (the others say nothing)."""
    rows = []
    for r in reports:
        if r.get("error"):
            rows.append(("observer", f"{r['name']}: disabled after an error: {r['error']}"))
        elif r.get("missed_steps") or r.get("missed_episodes") or r.get("missed_points"):
            points = f", {r['missed_points']} series points" if r.get("missed_points") else ""
            missed = f"{r['missed_steps']} steps and {r['missed_episodes']} episodes{points}"
            rows.append(
                ("observer", f"{r['name']}: too slow, missed {missed} (the store holds them all)")
            )
    return rows


def _print_agents(agents: list[AgentSummary]) -> None:
    if not agents:
        return
    print(f"\nper agent ({len(agents)} agents):")
    names = [printable("(no agent_id)" if a["agent_id"] is None else a["agent_id"]) for a in agents]
    width = max(len("agent"), *(len(n) for n in names))
    print(
        f"  {'agent':<{width}}  {'env steps':>10}  {'step lines':>10}  {'episodes':>8}"
        f"  {'mean return':>11}  {'last return':>11}"
    )
    for name, a in zip(names, agents, strict=True):
        mean = "-" if a["mean_return"] is None else f"{a['mean_return']:.3f}"
        last = "-" if a["last_return"] is None else f"{a['last_return']:.3f}"
        print(
            f"  {name:<{width}}  {a['env_steps']:>10}  {a['steps']:>10}  {a['episodes']:>8}"
            f"  {mean:>11}  {last:>11}"
        )


#: Series listed by ``runs show`` (``--json`` lists them all).
SERIES_SHOWN = 50


def _series_json(info: SeriesInfo) -> dict[str, object]:
    """A series for ``--json``: NaN and infinities as the strings ``"nan"``, ``"inf"``,
    ``"-inf"`` (JSON has no such numbers)."""
    value = info.last_value
    return {**dataclasses.asdict(info), "last_value": value if math.isfinite(value) else str(value)}


def _print_series(series: list[SeriesInfo], counts: SeriesCounts) -> None:
    if not series and not counts["refused"]:
        return
    refused = f", {counts['refused']} values refused" if counts["refused"] else ""
    print(f"\nseries ({counts['series']} series, {counts['points']} points{refused}):")
    if not series:
        return
    more = len(series) - SERIES_SHOWN
    series = series[:SERIES_SHOWN]
    names = [printable(s.name) for s in series]
    agents = [printable("-" if s.agent_id is None else s.agent_id) for s in series]
    nw = max(len("name"), *(len(n) for n in names))
    aw = max(len("agent"), *(len(a) for a in agents))
    print(f"  {'name':<{nw}}  {'agent':<{aw}}  {'points':>8}  {'last step':>10}  last value")
    for name, agent, s in zip(names, agents, series, strict=True):
        print(
            f"  {name:<{nw}}  {agent:<{aw}}  {s.points:>8}  {s.last_step:>10}  {s.last_value:.6g}"
        )
    if more > 0:
        print(f"  ... and {more} more (--json lists them all; runs export --what metrics)")


def _short(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _analytics(run_dir: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The run's ``analytics.json`` as a dict, or why there is none to show: ``(None, None)``
    when there is no file (yet), ``(None, message)`` when it is unreadable or invalid."""
    if not run_dir or not (Path(run_dir) / ANALYTICS_FILE).exists():
        return None, None
    try:
        return read_analytics(run_dir).to_dict(), None
    except AnalyticsError as exc:
        return None, str(exc)


def _analytics_rows(manifest: dict[str, Any] | None, error: str | None) -> list[tuple[str, str]]:
    if error is not None:
        return [("analytics", "unreadable: " + " ".join(error.split()))]  # one line
    if manifest is None:
        return [("analytics", "none (the run directory holds no analytics.json)")]

    def num(value: Any) -> str:
        return "-" if value is None else f"{value:.3f}"

    def returns(of: Mapping[str, Any]) -> str:  # "mean 1.000, best 2.000, last -"
        return ", ".join(f"{k} {num(of[k + '_return'])}" for k in ("mean", "best", "last"))

    rows = [
        (
            "analytics",
            f"{manifest['status']}: {manifest['episodes']} episodes, {manifest['steps']} steps "
            f"in {manifest['duration_seconds']:.1f}s",
        ),
        ("returns", returns(manifest)),
    ]
    per_agent = (manifest["extra"] or {}).get(AGENT_RETURNS)
    if isinstance(per_agent, dict) and per_agent:
        # A multi-agent run: the summary above blends the agents; each agent's follows.
        rows[-1] = ("returns", rows[-1][1] + " (all agents together)")
        for agent, own in per_agent.items():
            rows.append((f"returns {agent}", f"{returns(own)} ({own['episodes']} episodes)"))
    about = [f"{k} {manifest[k]}" for k in ("env_id", "algo", "seed") if manifest[k] is not None]
    if about:
        rows.append(("run of", ", ".join(about)))
    for checkpoint in manifest["checkpoints"]:
        step = "" if checkpoint["step"] is None else f" (step {checkpoint['step']})"
        rows.append(("checkpoint", f"{checkpoint['path']}{step}"))
    for directory in manifest["tensorboard_dirs"]:
        rows.append(("tensorboard", directory))
    if manifest["log"]:
        rows.append(("log", manifest["log"]))
    if manifest["extra"]:
        rows.append(("extra", ", ".join(sorted(manifest["extra"]))))
    return rows


def _print_metrics(metrics: RunMetrics) -> None:
    def pairs(values: Mapping[str, JsonValue]) -> str:
        return "  ".join(f"{k}={format_value(v)}" for k, v in sorted(values.items()))

    if metrics["events"]:
        print("\nmetrics (latest numeric values of the worker's own events):")
        for name, entry in sorted(metrics["events"].items()):
            count = f"({entry['count']} event{'s' if entry['count'] != 1 else ''})"
            print(printable(f"  {name} {count}  {pairs(entry['latest'])}".rstrip()))
    meta = metrics["episode_metadata"]
    if meta["episodes"]:
        print(f"\nepisode metadata (latest of {meta['episodes']} episode(s) carrying some):")
        print(printable(f"  {pairs(meta['latest'])}"))
