"""``mosaic run NAME [--config FILE] [--set KEY=VALUE]...``: run a worker to its end with a live
view and store what it writes; ``mosaic run path/to/train.py [-- ARGS]`` (or ``--module
pkg.train``) runs an unchanged Python script as the built-in ``script`` worker. Exit code:
0 completed, 1 failed, 130 cancelled, 2 a usage or config error."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.extras import MissingExtraError, require
from mosaic_sdk.plugins import PluginError
from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.paths import MosaicHomeError, default_store_path
from mosaic_sdk.runner.storage.store import StoreError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a worker or a Python script, store its telemetry, show live progress",
        description="Run a worker as a child process until it ends (Ctrl-C cancels it), store "
        "every line it writes in the SQLite store, and show its progress. A Python script "
        "(`mosaic run path/to/train.py -- ARGS`, or `--module pkg.train -- ARGS`) runs "
        "unchanged as the built-in script worker: every gymnasium env it makes reports its "
        "steps, episodes and frames, its SummaryWriter scalars become series, and pause, "
        "resume and stop work inside env.step.",
    )
    p.add_argument(
        "name",
        nargs="?",
        help="worker name (see `mosaic workers list`), or a Python script to run (a path "
        "ending in .py or holding a /); the script's own arguments go after --",
    )
    p.add_argument(
        "--module",
        metavar="MODULE",
        help="run a Python module as `python -m MODULE` does, from this directory (its "
        "arguments after --)",
    )
    add_config_options(p)
    p.add_argument("--run-id", help="use this run id instead of a new ULID")
    add_place_options(p, "the worker", "beside the store, e.g. runs/ for runs.sqlite")
    p.add_argument(
        "--max-line-bytes",
        type=int,
        metavar="N",
        help="the longest output line kept whole (default 16 MiB); a longer line is stored "
        "cut to N bytes, with the number of bytes dropped",
    )
    p.add_argument(
        "--stall-after",
        metavar="SECONDS",
        help="call the run stalled when its worker writes nothing for this long (0 or off: "
        "never); default: 3 x the heartbeat interval the worker declares, none if it "
        "declares none",
    )
    p.add_argument(
        "--on-stall",
        choices=("warn", "cancel"),
        default="warn",
        help="what a stall does: warn (default: mark the run stalled and say so) or cancel "
        "(stop it like Ctrl-C: SIGTERM, --grace, SIGKILL; it ends failed, 'stalled: ...')",
    )
    view = p.add_mutually_exclusive_group()
    view.add_argument("--quiet", "-q", action="store_true", help="print only the summary line")
    view.add_argument(
        "--plain", action="store_true", help="plain progress lines even in a terminal"
    )
    p.add_argument(
        "--no-preflight",
        dest="preflight",
        action="store_false",
        help="skip the worker's own --dry-run before the run (it catches configs the worker "
        "would refuse, e.g. an env id that does not exist, before a run is stored)",
    )
    p.add_argument(
        "--tensorboard",
        metavar="DIR",
        help="also write the run's series, finished episodes' returns and lengths and HParams "
        "(config, final metrics) as TensorBoard event files under DIR/RUN_ID while it goes on "
        "(an observer plugin; the same as setting MOSAIC_TENSORBOARD_DIR; needs tensorboardX: "
        "pip install 'mosaic-worker-sdk[tensorboard]')",
    )
    p.add_argument(
        "--tensorboard-doubles",
        action="store_true",
        help="with --tensorboard: exact double-precision tensors instead of float32 scalars "
        "(which every reader reads; the same as MOSAIC_TENSORBOARD_DOUBLES=1)",
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=cmd_run, takes_rest=True, rest=[])


def looks_like_script(name: str | None) -> bool:
    """Whether ``mosaic run NAME`` names a script (``train.py``, ``./train``) rather than a
    worker (worker names hold no ``/`` and do not end in ``.py``)."""
    return name is not None and (name.endswith(".py") or "/" in name or os.sep in name)


def add_config_options(p: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--set KEY=VALUE`` (``mosaic run``, ``submit`` and ``play``)."""
    p.add_argument("--config", metavar="FILE", help="JSON config file (flat or a job descriptor)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key (repeatable; VALUE is JSON if it parses, else a string; "
        "dotted keys reach into objects)",
    )


def add_place_options(p: argparse.ArgumentParser, who: str, runs_dir_default: str = "") -> None:
    """``--store``, ``--runs-dir`` and ``--grace``: where runs are stored, and how long ``who``
    may take to stop after Ctrl-C/SIGTERM (``mosaic run`` and ``mosaic sweep`` share them);
    ``runs_dir_default`` says where run directories go without ``--runs-dir``."""
    p.add_argument("--store", metavar="PATH", help="SQLite store file (default: under MOSAIC_HOME)")
    p.add_argument(
        "--runs-dir",
        metavar="DIR",
        help="parent of run directories"
        + (f" (default: {runs_dir_default})" if runs_dir_default else ""),
    )
    p.add_argument(
        "--grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help=f"after Ctrl-C/SIGTERM, how long {who} may take to stop before it is killed "
        "(default 10)",
    )


def cmd_run(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.contract import ConfigError
    from mosaic_sdk.runner.live import PlainDisplay, RichDisplay, choose_display
    from mosaic_sdk.runner.recording.health import stall_limit_value
    from mosaic_sdk.runner.supervision.config_input import load_job
    from mosaic_sdk.runner.supervisor import RunSupervisor, resolve_worker

    if not math.isfinite(args.grace) or args.grace < 0:  # NaN or infinity would never kill
        raise UsageError(
            f"--grace {args.grace} is not a finite number of seconds >= 0 (e.g. --grace 10)"
        )
    limits: dict[str, Any] = {}
    try:
        stall_after = stall_limit_value(args.stall_after, "--stall-after")
    except ValueError as exc:
        raise UsageError(f"{exc}, e.g. --stall-after 60") from None
    if args.tensorboard_doubles and not args.tensorboard:
        raise UsageError("--tensorboard-doubles says how --tensorboard DIR writes: give both")
    if args.tensorboard:
        # CLI start-up time
        from mosaic_sdk.runner.recording.tensorboard import ENV_DIR, ENV_DOUBLES, EXTRA

        with usage_errors(MissingExtraError):
            require("tensorboardX", EXTRA, "mosaic run --tensorboard")
        tensorboard = Path(args.tensorboard).expanduser().absolute()
        # the nearest part of the path that exists must be a directory (the rest is made)
        there = next((p for p in (tensorboard, *tensorboard.parents) if p.exists()), None)
        if there is not None and not there.is_dir():
            raise UsageError(
                f"--tensorboard {args.tensorboard}: {there} is a file, not a directory; give "
                "a directory (made when missing) for the event files"
            )
        # the runner registers its observer from the setting (sweeps' trials inherit it)
        os.environ[ENV_DIR] = str(tensorboard)
        if args.tensorboard_doubles:
            os.environ[ENV_DOUBLES] = "1"
    if args.max_line_bytes is not None:
        if args.max_line_bytes < 1:
            raise UsageError(f"--max-line-bytes {args.max_line_bytes}: give a number of bytes >= 1")
        limits["max_line_bytes"] = args.max_line_bytes
    script_args = list(args.rest)
    script_mode = args.module is not None or looks_like_script(args.name)
    if args.module is not None and args.name is not None:
        raise UsageError(
            f"give a worker or script ({args.name!r}) or --module {args.module}, not both "
            "(the module's arguments go after --)"
        )
    if args.name is None and args.module is None:
        raise UsageError(
            "name a worker to run (mosaic workers list) or a script: "
            "mosaic run path/to/train.py [-- ARGS]"
        )
    if script_args and not script_mode:
        raise UsageError(
            f"the arguments after -- are a script's, and {args.name!r} is a worker: give it "
            "its config with --config FILE or --set KEY=VALUE (a script is a path: "
            "mosaic run ./train.py -- ARGS)"
        )
    try:
        if script_mode:
            handle, job = _script_run(args, script_args)
        else:
            handle = resolve_worker(args.name)
            job = load_job(args.config or None, args.overrides, run_id=args.run_id)
            if args.preflight:
                _preflight(handle, job, args)
        quiet = args.quiet or args.json
        display = PlainDisplay(sys.stdout) if args.plain else choose_display(quiet=quiet)
        supervisor = RunSupervisor(
            handle,
            job,
            store=Path(args.store).expanduser() if args.store else None,
            runs_dir=Path(args.runs_dir).expanduser() if args.runs_dir else None,
            grace=args.grace,
            display=display,
            keys=isinstance(display, RichDisplay) and _stdin_is_terminal(),
            stall_after=stall_after,
            on_stall=args.on_stall,
            **limits,
        )
    except ConfigError as exc:
        what = "the script" if script_mode else f"worker {args.name!r}"
        raise UsageError(f"invalid config for {what}: {exc}") from None
    except (PluginError, StoreError, MosaicHomeError) as exc:
        raise UsageError(str(exc)) from None
    except TypeError as exc:  # a plugin hook answered with the wrong type
        raise UsageError(f"worker {args.name!r} is misdeclared: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot prepare the run: {exc}") from None
    result = supervisor.run()
    if args.json:
        print(json.dumps(result_dict(result), indent=2, sort_keys=True))
    else:
        print(summary_line(result), flush=True)
    if script_mode and result.status == "completed" and result.counts.get("episodes") == 0:
        from mosaic_sdk.instrument.script_config import NO_ENV_NOTICE  # CLI start-up time

        print(f"mosaic: note: {NO_ENV_NOTICE}", file=sys.stderr, flush=True)
    return result.runner_exit_code


def _script_run(args: argparse.Namespace, script_args: list[str]) -> tuple[Any, Any]:
    """The handle of the built-in script worker and the job of this script: its path (or
    module) checked here, before anything is stored or launched."""
    # CLI start-up time
    from mosaic_sdk.runner.supervision.config_input import load_job
    from mosaic_sdk.runner.supervision.script_worker import (
        ScriptNotFound,
        script_job,
        script_worker_handle,
    )

    base = load_job(args.config or None, args.overrides, run_id=args.run_id)
    try:
        job = script_job(
            base,
            script=None if args.module is not None else args.name,
            module=args.module,
            args=script_args,
            stop_grace=args.grace,
        )
    except ScriptNotFound as exc:
        raise UsageError(f"{exc}; nothing was run or stored") from None
    return script_worker_handle(), job


def _stdin_is_terminal() -> bool:
    """Keys in the live view only when stdin is a terminal (never a pipe or a file)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def _preflight(handle: Any, job: Any, args: argparse.Namespace) -> None:
    """Raise UsageError when the worker's own dry run refuses the config (nothing is stored).
    A worker that cannot be started is left to the run, which records why; upstream-style
    workers are not asked (their guide does not require ``--dry-run``: they may train)."""
    if getattr(handle, "style", "plugin") != "plugin":
        return
    from mosaic_sdk.runner.supervision.preflight import preflight  # CLI start-up time

    try:
        said = preflight(handle, job)
    except OSError:
        return
    if not said.ok:
        raise UsageError(
            printable(
                f"worker {args.name!r} refuses this config: {said.problem}; nothing was run "
                "or stored (fix the config; --no-preflight skips this check)"
            )
        )


def result_dict(result: Any) -> dict[str, Any]:
    return {
        "run_id": result.run_id,
        "worker": result.worker,
        "status": result.status,
        "exit_code": result.exit_code,
        "error": result.error,
        "counts": result.counts,
        "env_steps": max(result.env_steps, result.counts.get("steps", 0)),
        "run_dir": str(result.run_dir),
        "store": str(result.store_path),
        "duration_seconds": result.duration_seconds,
        "synthesised": result.synthesised,
        "warnings": list(getattr(result, "warnings", [])),
        "lost_rows": result.lost_rows,
        "observers": list(getattr(result, "observers", [])),
        "agents": list(getattr(result, "agents", [])),
    }


def count_parts(c: Mapping[str, Any], env_steps: int | None = None) -> list[str]:
    """``["150 env steps", "15 step lines", "3 episodes"]`` (a multi-agent run: ``"2 games
    (4 agent episodes)"``) from a run's counts: each number named for what it counts."""
    env = c.get("env_steps", c["steps"]) if env_steps is None else env_steps
    parts = [f"{env} env steps", f"{c.get('step_lines', c['steps'])} step lines"]
    if c.get("games") is not None:
        parts[0] += " (summed over the agents)"
        parts.append(f"{c['games']} games ({c['agent_episodes']} agent episodes)")
    else:
        parts.append(f"{c['episodes']} episodes")
    return parts


def agent_returns(agents: Sequence[Mapping[str, Any]]) -> str:
    """``player_0 mean 1.000 (last 2.000), player_1 mean -1.000 (...)``: a multi-agent run's
    returns told apart (their blend means nothing: in a zero-sum game it reads 0)."""
    out = []
    for a in agents:
        name = "(no agent_id)" if a["agent_id"] is None else str(a["agent_id"])
        mean, last = a.get("mean_return"), a.get("last_return")
        said = "-" if mean is None else f"{mean:.3f}"
        said += "" if last is None else f" (last {last:.3f})"
        out.append(f"{name} mean {said}")
    return ", ".join(out)


def summary_line(result: Any) -> str:
    """``run 01J... completed: 500 env steps, 50 step lines, 5 episodes, ... (store ...);
    inspect: mosaic runs show 01J...`` (a multi-agent run: games, agent episodes and the
    returns per agent)."""
    c = result.counts
    store_opt = f" --store {result.store_path}"
    with contextlib.suppress(MosaicHomeError):  # no default store: the option is needed
        if Path(result.store_path).resolve() == default_store_path().resolve():
            store_opt = ""
    parts = count_parts(c, max(getattr(result, "env_steps", 0), c["steps"]))
    if c.get("series_points"):
        parts.append(f"{c['series_points']} series points")
    parts += [f"{c['events']} events", f"{c['log_lines']} log lines"]
    agents = getattr(result, "agents", None) or []
    if agents:
        parts.append("returns per agent: " + agent_returns(agents))
    why = f" ({result.error})" if result.error and result.status != "completed" else ""
    line = (
        f"run {result.run_id} {result.status}{why}: {', '.join(parts)} in "
        f"{result.duration_seconds:.1f}s; store {result.store_path}; "
        f"inspect: mosaic runs show {result.run_id}{store_opt}"
    )
    return printable(line)  # the error may quote the worker's stderr
