"""``mosaic submit NAME --daemon HOST:PORT [--wait]``: submit a run of an installed SDK worker to a
running MOSAIC trainer daemon (its gRPC ``SubmitRun``). Exit code: 0 submitted, 1 no daemon
answers or the run failed, 2 a usage or config error."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.cli.run import add_config_options
from mosaic_sdk.runner.printable import printable

#: How long ``--wait`` follows a run when ``--timeout`` is not given (seconds).
WAIT_TIMEOUT = 3600.0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "submit",
        help="submit a run of a worker to a running MOSAIC trainer daemon",
        description="Submit a run of an installed worker to a MOSAIC trainer daemon (its gRPC "
        "SubmitRun): the platform starts the worker as it starts its own and keeps its "
        "telemetry. --wait follows the run to its end.",
    )
    p.add_argument("name", help="worker name (see `mosaic workers list`)")
    p.add_argument(
        "--daemon",
        metavar="HOST:PORT",
        help="the trainer daemon's gRPC address (default 127.0.0.1:50055, the platform's)",
    )
    add_config_options(p)
    p.add_argument(
        "--run-name",
        help="the run's name in the platform (default: NAME-RUNID): 1-120 characters, no "
        "control character, '/' or '\\'",
    )
    p.add_argument(
        "--worker-id",
        help="the worker id the platform shows and stamps on telemetry (default: the "
        "config's worker_id, else NAME_worker)",
    )
    p.add_argument(
        "--wait", action="store_true", help="follow the run until it ends and say how it ended"
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"with --wait: give up following after this long (default {WAIT_TIMEOUT:g} s); the "
        "run goes on in the daemon",
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=cmd_submit)


def _say(args: argparse.Namespace, text: str) -> None:
    print(printable(text), file=sys.stderr if args.json else sys.stdout, flush=True)


def _error(text: object) -> None:
    """``mosaic: error: TEXT`` on stderr: the daemon's words shown, never obeyed."""
    print(printable(f"mosaic: error: {text}"), file=sys.stderr, flush=True)


def cmd_submit(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.contract import ConfigError
    from mosaic_sdk.extras import MissingExtraError, require
    from mosaic_sdk.plugins import PluginError
    from mosaic_sdk.runner.storage.ids import new_run_id
    from mosaic_sdk.runner.supervision.config_input import load_job
    from mosaic_sdk.runner.supervision.resolve import resolve_worker
    from mosaic_sdk.submit import dispatch

    with usage_errors(MissingExtraError):
        require("grpc", "submit", "mosaic submit")
        require("google.protobuf.descriptor_pb2", "submit", "mosaic submit")
    # grpcio is the submit extra's: imported here so that `mosaic` runs without it.
    from mosaic_sdk.submit.client import DaemonClient, describe_failure

    daemon = args.daemon or dispatch.DEFAULT_DAEMON
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout} is not a number of seconds > 0")
    try:
        handle = resolve_worker(args.name)
        job = load_job(args.config or None, args.overrides)
    except (PluginError, LookupError) as exc:
        raise UsageError(str(exc)) from None
    except ConfigError as exc:
        raise UsageError(f"invalid config: {exc}") from None
    run_id = job.run_id if dispatch.is_ulid(job.run_id) else new_run_id()
    flat = {**job.config, "run_id": run_id}
    try:
        config = handle.config_model().from_dict(flat)
    except ConfigError as exc:
        raise UsageError(f"invalid config for worker {args.name!r}: {exc}") from None
    with usage_errors(dispatch.SubmitError):
        worker_id = dispatch.worker_id_for(args.name, args.worker_id, flat)
        launch = dispatch.module_launch(handle, config)
        given = args.run_name
        run_name = dispatch.check_run_name(given) if given is not None else None
    try:
        fastlane = dispatch.publishes_frames(handle.describe()[1], config, launch.env or {})
    except ValueError as exc:
        raise UsageError(f"FastLane: {exc}") from None
    payload = dispatch.train_run_config(
        worker=args.name,
        launch=launch,
        config=flat,
        run_id=run_id,
        worker_id=worker_id,
        run_name=run_name or dispatch.default_run_name(args.name, run_id),
        grpc_target=daemon,
        fastlane=fastlane,
    )
    result: dict[str, Any] = {
        "daemon": daemon,
        "worker": args.name,
        "worker_id": worker_id,
        "fastlane": fastlane,
    }
    with DaemonClient(daemon) as client:
        try:
            client.health()
        except dispatch.SubmitError as exc:
            _error(exc)
            return 1
        try:
            response = client.submit(payload, run_id)
        except dispatch.SubmitError as exc:
            _error(exc)
            return 2
        result.update(run_id=response.run_id, digest=response.digest)
        _say(
            args,
            f"submitted run {response.run_id} of {args.name} (python -m {launch.module}, "
            f"worker id {worker_id}) to the daemon at {daemon}",
        )
        if not args.wait:
            result["status"] = "INIT"
            _print_json(args, result)
            return 0
        try:
            outcome = client.follow(
                response.run_id,
                timeout=WAIT_TIMEOUT if args.timeout is None else args.timeout,
                on_status=lambda name, record: _say(args, f"  {name}"),
            )
            episodes = client.stored_episodes(response.run_id)
        except dispatch.SubmitError as exc:
            _error(exc)
            return 1
    result.update(
        status=outcome.status,
        failure_reason=outcome.failure_reason,
        statuses=outcome.statuses,
        episodes=[e.episode_index for e in episodes],
        steps=[e.steps for e in episodes],
        agents=[e.agent_id for e in episodes],
    )
    stored = f"{len(episodes)} episode(s) in the daemon's telemetry store ({_indices(episodes)})"
    if outcome.ok:
        _say(args, f"run {outcome.run_id}: {outcome.status}; {stored}")
        _print_json(args, result)
        return 0
    reason = describe_failure(outcome.failure_reason)
    _error(
        f"run {outcome.run_id} ended {outcome.status} ({reason}); {stored}; "
        "the worker's stderr is in the daemon's log"
    )
    _print_json(args, result)
    return 1


def _indices(episodes: list[Any]) -> str:
    """``indices 0, 1, 2`` (``0-52`` for a run of four or more); per agent when the run has
    several (``a: 0, 1; b: 0, 1``)."""
    agents: dict[str, list[int]] = {}
    for e in episodes:
        agents.setdefault(e.agent_id, []).append(e.episode_index)
    if len(agents) <= 1:
        return "indices " + (_ranges(next(iter(agents.values()), [])) or "none")
    return "indices " + "; ".join(f"{a}: {_ranges(i)}" for a, i in agents.items())


def _ranges(indices: list[int]) -> str:
    parts: list[str] = []
    start = 0
    for i in range(1, len(indices) + 1):
        if i == len(indices) or indices[i] != indices[i - 1] + 1:
            run = indices[start:i]
            parts += [f"{run[0]}-{run[-1]}"] if len(run) >= 4 else [str(n) for n in run]
            start = i
    return ", ".join(parts)


def _print_json(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(result, sort_keys=True), flush=True)
