"""The command line every worker shares: ``python -m my_worker --config PATH [--dry-run] ...``."""

from __future__ import annotations

import argparse
import io
import os
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from mosaic_sdk.contract import (
    ConfigError,
    WorkerConfig,
    check_run_id,
    ignored_platform_keys,
    read_config_json,
    unwrap_job_descriptor,
)
from mosaic_sdk.control.channel import ControlChannel
from mosaic_sdk.run_context import RunContext
from mosaic_sdk.telemetry.emitter import TelemetryEmitter
from mosaic_sdk.telemetry.stdout import claim_stdout

if TYPE_CHECKING:
    from mosaic_sdk.control.interactive import InteractiveSession

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Run one MOSAIC worker job.")
    p.add_argument("--config", required=True, metavar="PATH", help="JSON config file")
    p.add_argument("--dry-run", action="store_true", help="validate the config and exit")
    p.add_argument("--worker-id", default=None, help="identifier added to every telemetry line")
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("--grpc", action="store_true", help="reserved; telemetry goes to stdout")
    p.add_argument("--grpc-target", default="127.0.0.1:50055", help="reserved")
    return p


def _raw_run_id(raw: Any) -> str:
    """A safe run id for the run_failed line of a config that did not validate."""
    candidates: list[Any] = []
    if isinstance(raw, Mapping):
        candidates += [unwrap_job_descriptor(raw).get("run_id"), raw.get("run_id")]
    candidates.append(os.environ.get("MOSAIC_RUN_ID"))
    for value in candidates:
        if isinstance(value, str):
            try:
                return check_run_id(value)
            except ValueError:
                continue
    return "unknown"


def _fail_config(message: str, raw: Any, worker_id: str | None, out: Any) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    with TelemetryEmitter(_raw_run_id(raw), out, worker_id=worker_id, flush_interval=0) as em:
        em.run_failed(error=message, error_type="ConfigError")
    return EXIT_CONFIG


def ignored_summary(keys: Sequence[str]) -> str:
    """The one line that reports the platform's config keys a worker does not use."""
    return f"config keys of the platform this worker does not use, ignored: {', '.join(keys)}"


#: The run id a ``--dry-run`` validates with when the config names none: nothing is run or
#: written, so no real id is needed, and a config file can be checked before a run exists.
DRY_RUN_ID = "dry-run"


def load_config(
    path: str, model: type[WorkerConfig], *, default_run_id: str | None = None
) -> tuple[Any, WorkerConfig]:
    """Read and validate a config file. Raises ConfigError with a readable message (its
    ``raw`` attribute holds the parsed file when it was JSON, to find a run id in).

    ``default_run_id`` is used when neither the config (flat or job descriptor) nor
    ``MOSAIC_RUN_ID`` gives one."""
    raw = read_config_json(path)
    data: Any = raw
    if default_run_id is not None and isinstance(raw, Mapping):
        flat = unwrap_job_descriptor(raw)
        if flat.get("run_id") in (None, ""):
            data = {**flat, "run_id": os.environ.get("MOSAIC_RUN_ID") or default_run_id}
    try:
        return raw, model.from_dict(data)
    except ConfigError as exc:
        exc.raw = raw  # type: ignore[attr-defined]
        raise


def _stdin() -> BinaryIO:
    """The process's stdin as a buffered binary stream of its own (fd 0 stays open)."""
    try:
        return open(0, "rb", closefd=False)  # noqa: SIM115 - read until EOF by the channel
    except OSError:
        return io.BytesIO(b"")  # no stdin at all: the same as one that is closed


def worker_main(
    *,
    config_model: type[WorkerConfig],
    run: Callable[[RunContext], object],
    describe_dry_run: Callable[[WorkerConfig], str] | None = None,
    argv: Sequence[str] | None = None,
    prog: str | None = None,
    log_path: Callable[[WorkerConfig, Path], Path] | None = None,
    capabilities: object = None,
    interactive: Callable[[RunContext], InteractiveSession] | None = None,
    control_stdin: BinaryIO | None = None,
    control_setup: Callable[[ControlChannel], object] | None = None,
) -> int:
    """Parse the worker CLI, load the config, run ``run(ctx)``; returns the exit code.

    ``describe_dry_run(config)`` may raise ``ValueError`` to fail a dry run (e.g. an env id
    that is not registered); its return value is printed on stderr. ``log_path(config,
    run_dir)`` sends stray prints to that file instead of stderr. ``control_setup(channel)``
    is called with the run's control channel before it reads the first command.
    """
    args = build_parser(prog or Path(sys.argv[0]).name).parse_args(argv)
    out = claim_stdout()
    if args.grpc:
        print("warning: --grpc is reserved; telemetry is written to stdout", file=sys.stderr)
    try:
        raw, config = load_config(
            args.config, config_model, default_run_id=DRY_RUN_ID if args.dry_run else None
        )
    except ConfigError as exc:
        return _fail_config(
            f"invalid config: {exc}", getattr(exc, "raw", None), args.worker_id, out
        )
    # The command line's --worker-id wins; the dispatcher writes both, the same.
    worker_id = args.worker_id or config.worker_id

    def fail(message: str) -> int:
        return _fail_config(message, config.to_dict(), worker_id, out)

    ignored = ignored_platform_keys(raw, config_model)
    if ignored:  # once per run, on stderr (never the telemetry stream)
        print(f"note: {ignored_summary(ignored)}", file=sys.stderr, flush=True)
    if describe_dry_run is not None:
        try:
            summary = describe_dry_run(config)
        except ValueError as exc:
            return fail(str(exc))
    else:
        summary = "config is valid"
    interactive_mode = getattr(config, "mode", None) == "interactive"
    if interactive_mode and interactive is None:
        return fail(
            "this worker has no interactive mode (config mode 'interactive'); use mode 'train'"
        )
    if args.dry_run:
        print(f"dry run: {summary}", file=sys.stderr, flush=True)
        return EXIT_COMPLETED

    run_dir = Path(os.environ.get("MOSAIC_RUN_DIR") or Path(args.config).resolve().parent)
    # The platform's daemon names a run directory (var/trainer/runs/<run id>) it does not create.
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return fail(f"cannot create the run directory {run_dir} (MOSAIC_RUN_DIR): {exc}")
    if log_path is not None:
        target = log_path(config, run_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.close(fd)

    emitter = TelemetryEmitter(config.run_id, out, worker_id=worker_id)
    ctx = RunContext(config, emitter, run_dir, worker_id, args.verbose)

    def on_stop() -> None:
        # Exactly as SIGTERM: the worker's own handler runs too (e.g. one that interrupts a
        # training script the worker does not loop in itself).
        ctx.cancel_reason = "stop command"
        os.kill(os.getpid(), signal.SIGTERM)

    channel = ControlChannel(emitter, ctx.cancel, capabilities=capabilities, on_stop=on_stop)
    ctx.control = channel
    if interactive_mode:
        channel.interactive = queue.Queue()
    if control_setup is not None:
        control_setup(channel)
    channel.start(control_stdin or _stdin())

    def on_signal(signum: int, frame: Any) -> None:
        ctx.cancel_signal = signum
        ctx.cancel.set()
        # Not channel.wake() here: the loop may hold the lock that wake() takes.
        threading.Thread(target=channel.wake, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        if interactive_mode:
            assert interactive is not None
            # Imported here: only an interactive run pays for the protocol's models.
            from mosaic_sdk.control.interactive import serve_interactive

            worker_type = getattr(capabilities, "worker_type", None) or prog or "worker"
            serve_interactive(ctx, interactive(ctx), worker_type)
        else:
            run(ctx)
    except Exception as exc:  # noqa: BLE001 - every failure becomes run_failed
        if emitter.terminal_event is None:
            emitter.run_failed(
                error=str(exc) or type(exc).__name__,
                error_type=type(exc).__name__,
                traceback=traceback.format_exc(),
            )
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        emitter.close()
        return EXIT_FAILED
    if ctx.cancel.is_set() and emitter.terminal_event is None:
        emitter.run_cancelled(reason=ctx.stop_reason, completed_episodes=0)
    emitter.close()
    if emitter.terminal_event == "run_failed":
        return EXIT_FAILED
    if emitter.terminal_event == "run_cancelled":
        return 130 if ctx.cancel_signal == signal.SIGINT else 143
    return EXIT_COMPLETED


__all__ = [
    "EXIT_COMPLETED",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "RunContext",
    "build_parser",
    "ignored_summary",
    "load_config",
    "worker_main",
]
