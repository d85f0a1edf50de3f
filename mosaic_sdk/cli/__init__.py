"""``mosaic``: the command line. Thin: parse arguments, call the library, print for humans."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterator, Sequence

from mosaic_sdk import __version__

# One line per sub-command module (mosaic_sdk/cli/<name>.py).
COMMAND_MODULES: tuple[str, ...] = (
    "workers",
    "plugins",
    "run",
    "runs",
    "sweep",
    "control",
    "fastlane",
    "conformance",
    "new",
    "watch",
    "play",
    "submit",
    "engine",
)


class UsageError(Exception):
    """A mistake in what the user asked for: printed as one line, exit code 2."""


@contextlib.contextmanager
def usage_errors(*kinds: type[Exception], writing: str | None = None) -> Iterator[None]:
    """Raise an exception of ``kinds`` from the block again as a :class:`UsageError` (same
    message); with ``writing``, an OSError too, as ``cannot write WRITING: ...`` (a broken
    pipe goes on: :func:`main` ends quietly)."""
    try:
        yield
    except kinds as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        if writing is None or isinstance(exc, BrokenPipeError):
            raise
        raise UsageError(f"cannot write {writing}: {exc.strerror or exc}") from None


def print_warning(message: str) -> None:
    """How ``mosaic`` shows a warning of the library (the runner's reporter, see
    :mod:`mosaic_sdk.runner.reporting`): one ``mosaic: warning: ...`` line on stderr, with any
    terminal escapes it quotes from a worker shown, not obeyed."""
    from mosaic_sdk.runner.printable import printable  # CLI start-up time

    print(printable(f"mosaic: warning: {message}"), file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mosaic", description="Run, inspect and validate MOSAIC workers."
    )
    parser.add_argument("--version", action="version", version=f"mosaic-worker-sdk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"mosaic_sdk.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    from mosaic_sdk.runner.reporting import Reporter, use_reporter  # CLI start-up time

    try:
        with use_reporter(Reporter(on_warning=print_warning)):
            return int(handler(args) or 0)
    except UsageError as exc:
        from mosaic_sdk.runner.printable import printable  # CLI start-up time

        # a name or value it quotes (a metric, a daemon's words) is shown, not obeyed
        lines = (printable(line) for line in str(exc).split("\n"))
        print("mosaic: error: " + "\n".join(lines), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mosaic: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
