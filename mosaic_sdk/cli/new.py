"""``mosaic new [-o DIR] [--no-input] [key=value ...]``: bake a new worker package."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mosaic_sdk.cli import usage_errors


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "new",
        help="create a new worker package from the SDK's template",
        description=(
            "Create a worker package (config, runtime, telemetry, analytics, CLI, tests, CI) "
            "ready for `pip install -e .` and `mosaic conformance`. key=value pairs pre-fill "
            "the answers; the others are asked for, or take their defaults with --no-input."
        ),
    )
    p.add_argument(
        "-o", "--output-dir", default=".", metavar="DIR", help="where to create the project"
    )
    p.add_argument(
        "--no-input", action="store_true", help="ask nothing: use key=value pairs and defaults"
    )
    p.add_argument(
        "--config-file",
        metavar="PATH",
        help="cookiecutter user config (default: $COOKIECUTTER_CONFIG or ~/.cookiecutterrc)",
    )
    p.add_argument("answers", nargs="*", metavar="key=value", help="pre-filled answers")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from mosaic_sdk.scaffold import ScaffoldError, bake, parse_assignments  # CLI start-up time

    with usage_errors(ScaffoldError):
        overrides = parse_assignments(args.answers)
        result = bake(
            args.output_dir, overrides, no_input=args.no_input, config_file=args.config_file
        )
    print(f"created {result.project_dir} (worker type {result.worker_type!r})")
    print("next:")
    for command in result.next_commands():
        print(f"  {command}")
    warning = result.sdk_warning()
    if warning:
        sys.stdout.flush()  # the note comes after the commands, also when both go to one pipe
        print(warning, file=sys.stderr)
    return 0
