"""``mosaic conformance NAME``: run the conformance suite on an installed worker."""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.plugins import PluginError

_STYLE = {
    "passed": "green",
    "failed": "bold red",
    "error": "bold red",
    "xfailed": "yellow",
    "xpassed": "bold red",
    "skipped": "dim",
    "advisory": "yellow",
}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "conformance",
        help="validate an installed worker against the worker contract",
        description="Run the conformance suite on an installed worker: discovery, "
        "description, config, CLI, telemetry, determinism, stop, FastLane, environments, "
        "packaging and hygiene checks.",
    )
    p.add_argument("name", nargs="?", help="worker name (see `mosaic workers list`)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--expect-fail",
        action="append",
        default=[],
        metavar="CHECK=REASON",
        help="a failure of CHECK is expected (repeatable); an unexpected pass fails",
    )
    p.add_argument(
        "-k",
        dest="keyword",
        metavar="PATTERN",
        help='select checks by name, e.g. -k "telemetry and not heartbeats"',
    )
    p.add_argument(
        "--level",
        choices=("platform", "sdk"),
        help="level to judge at: platform (what the deployed platform needs) or sdk "
        "(everything); default: the worker's own (platform for upstream-style workers, sdk "
        "for SDK-built ones). Checks outside the level are advisories",
    )
    p.add_argument("--list", action="store_true", help="list the checks (with levels) and exit")
    p.set_defaults(handler=handle)


def parse_expect_fail(values: list[str]) -> dict[str, str]:
    expected: dict[str, str] = {}
    for value in values:
        name, sep, reason = value.partition("=")
        if not sep or not name.strip() or not reason.strip():
            raise UsageError(
                f"--expect-fail {value!r}: write CHECK=REASON, e.g. "
                "--expect-fail 'telemetry.heartbeats=not implemented yet'"
            )
        expected[name.strip()] = reason.strip()
    return expected


def handle(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.conformance import check_worker, describe_checks, select_checks

    if args.list:
        with usage_errors(ValueError):
            names = {c.name for c in select_checks(args.keyword)}
        rows = [c for c in describe_checks() if c["name"] in names]
        if args.level:
            rows = [r for r in rows if args.level in r["levels"]]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for row in rows:
                levels = "+".join(row["levels"])
                print(f"{row['name']:<40} {levels:<13} {row['description']}")
        return 0
    if not args.name:
        raise UsageError("name the worker to check, e.g. `mosaic conformance example`")
    expected = parse_expect_fail(args.expect_fail)
    printer = None if args.json else _RowPrinter(args.name, args.level)
    started = time.perf_counter()
    try:
        results = check_worker(
            args.name,
            on_fail=None,
            keyword=args.keyword,
            expected_failures=expected,
            on_result=printer.row if printer else None,
            level=args.level,
        )
    except PluginError as exc:
        raise UsageError(str(exc)) from None
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc.args[0] if exc.args else exc)) from None
    elapsed = time.perf_counter() - started
    counts = dict(Counter(r.verdict for r in results))
    ok = all(r.ok for r in results)
    level = results[0].level if results else args.level
    if args.json:
        doc = {
            "worker": args.name,
            "level": level,
            "level_from": "--level" if args.level else "the worker's style",
            "ok": ok,
            "duration": round(elapsed, 3),
            "counts": counts,
            "results": [r.to_dict() for r in results],
            "advisories": [r.to_dict() for r in results if r.verdict == "advisory"],
        }
        print(json.dumps(doc, indent=2))
    elif printer is not None:
        printer.summary(counts, ok, elapsed, level)
    return 0 if ok else 1


class _RowPrinter:
    def __init__(self, worker: str, level: str | None) -> None:
        from rich.console import Console  # CLI start-up time

        self.console = Console(highlight=False, soft_wrap=True)
        if not self.console.is_terminal:  # a log or a pipe: whole lines, no colour codes
            self.console = Console(highlight=False, soft_wrap=True, width=100_000, no_color=True)
        self.worker = worker
        self.level = level
        self.headed = False

    def _head(self, level: str) -> None:
        if self.headed:
            return
        self.headed = True
        source = "--level" if self.level else "the worker's own level"
        self.console.print(
            f"conformance of worker [bold]{self.worker}[/bold] at level [bold]{level}[/bold] "
            f"({source}; checks outside it are advisories)"
        )
        self.console.print(f"{'check':<40} {'verdict':<8} {'time':>7}  reason", style="bold")

    def row(self, result: Any) -> None:
        from rich.markup import escape  # CLI start-up time

        self._head(result.level)
        style = _STYLE.get(result.verdict, "")
        width = max(self.console.width - 60, 30)
        reason = (
            result.reason if len(result.reason) <= width else result.reason[: width - 3] + "..."
        )
        self.console.print(
            f"{result.name:<40} [{style}]{result.verdict:<8}[/{style}] "
            f"{result.duration:>6.2f}s  {escape(reason)}"
        )
        if result.hint:
            self.console.print(f"{'':<40} [cyan]hint:[/cyan] {escape(result.hint)}")

    def summary(self, counts: dict[str, int], ok: bool, elapsed: float, level: str | None) -> None:
        parts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        verdict = "[green]conformant[/green]" if ok else "[bold red]NOT conformant[/bold red]"
        at = f" at level {level}" if level else ""
        self.console.print(f"{verdict}{at}: {parts} in {elapsed:.1f} s")
