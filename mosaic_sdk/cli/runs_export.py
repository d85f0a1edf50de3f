"""``mosaic runs export RUN [options]``: a run's stored rows for other tools (pandas, a
notebook, a spreadsheet). The formats and the streaming are in
:mod:`mosaic_sdk.runner.storage.export`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.cli.store_access import open_store
from mosaic_sdk.extras import MissingExtraError, require
from mosaic_sdk.runner.storage.export import export_run, format_for
from mosaic_sdk.runner.storage.store import StoreError


def register(rsub: Any, store_arg: Any) -> None:
    """Add ``export`` to the ``mosaic runs`` sub-commands."""
    p = rsub.add_parser(
        "export",
        help="a run's steps, episodes, events or series points as CSV, JSONL or Parquet",
        description="Stream a run's stored rows (read-only) to a file or standard output. "
        "Parquet needs pyarrow: pip install 'mosaic-worker-sdk[parquet]'.",
    )
    p.add_argument("run_id", metavar="RUN", help="a run id, or a unique prefix of one")
    p.add_argument(
        "--format",
        dest="fmt",
        choices=("csv", "jsonl", "parquet", "tensorboard"),
        help="default: by the suffix of -o (.csv, .jsonl, .parquet), else csv; tensorboard "
        "(with --what metrics): TensorBoard event files under the directory -o DIR: the "
        "series, finished episodes' returns and lengths, HParams (config, final metrics); a "
        "second export replaces the run's files (needs tensorboardX: pip install "
        "'mosaic-worker-sdk[tensorboard]')",
    )
    p.add_argument(
        "--tensorboard-doubles",
        action="store_true",
        help="with --format tensorboard: exact double-precision tensors instead of float32 "
        "scalars (which every reader reads)",
    )
    p.add_argument(
        "--what",
        choices=("steps", "episodes", "events", "metrics"),
        default="steps",
        help="which rows (default steps); metrics: one row per series point (run_id, name, "
        "agent_id, step, value, wall_time)",
    )
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="GLOB",
        help="with --what metrics: only the series whose name matches (repeatable)",
    )
    p.add_argument(
        "--agent",
        metavar="ID",
        help="only the steps, episodes or series of this agent_id (a multi-agent run)",
    )
    p.add_argument(
        "--include-unfinished",
        action="store_true",
        help="with --what episodes: the episodes the run's end cut off too (left out "
        "otherwise; the unfinished column flags them)",
    )
    p.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="FILE",
        help="the file to write (default -: standard output)",
    )
    store_arg(p)
    p.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    if args.metric and args.what != "metrics":
        raise UsageError("--metric picks series: use it with --what metrics")
    fmt = args.fmt or format_for(args.output)
    to_stdout = args.output == "-"
    if args.tensorboard_doubles and fmt != "tensorboard":
        raise UsageError("--tensorboard-doubles says how --format tensorboard writes")
    if fmt == "tensorboard":
        return _export_tensorboard(args, to_stdout)
    if fmt == "parquet":
        with usage_errors(MissingExtraError):
            require("pyarrow", "parquet", "mosaic runs export --format parquet")
        if to_stdout and sys.stdout.isatty():
            raise UsageError("parquet is binary: give -o FILE.parquet, or redirect the output")
    with open_store(args) as store:
        with usage_errors(StoreError, MissingExtraError, writing=args.output):
            count = export_run(
                store,
                args.run_id,
                what=args.what,
                fmt=fmt,
                output=args.output,
                agent=args.agent,
                metrics=args.metric or None,
                include_unfinished=args.include_unfinished,
            )
    if not to_stdout:
        rows = "point" if args.what == "metrics" else f"{args.what} row"
        print(f"wrote {count} {rows}{'s' if count != 1 else ''} to {args.output} ({fmt})")
    return 0


def _export_tensorboard(args: argparse.Namespace, to_stdout: bool) -> int:
    """``--format tensorboard``: see :mod:`mosaic_sdk.runner.recording.tensorboard`."""
    # CLI start-up time
    from mosaic_sdk.runner.recording.tensorboard import EXTRA, export_tensorboard

    if args.what != "metrics":
        raise UsageError("--format tensorboard writes series: use it with --what metrics")
    if to_stdout:
        raise UsageError("--format tensorboard writes a directory of event files: give -o DIR")
    with usage_errors(MissingExtraError):
        require("tensorboardX", EXTRA, "mosaic runs export --format tensorboard")
    with open_store(args) as store:
        with usage_errors(StoreError, writing=args.output):
            full = store.resolve(args.run_id)
            count = export_tensorboard(
                store,
                full,
                args.output,
                agent=args.agent,
                metrics=args.metric or None,
                doubles=args.tensorboard_doubles,
            )
    print(f"wrote {count} point{'s' if count != 1 else ''} to {args.output} (tensorboard)")
    return 0
