"""``mosaic control RUN pause|resume|stop|checkpoint|ping``: send one command to a running run
through its control socket and print the reply. Exit code: 0 ``ok``, 1 refused, 2 a usage
error, 3 the run cannot be reached."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from mosaic_sdk.cli import usage_errors
from mosaic_sdk.cli.store_access import open_store
from mosaic_sdk.runner.printable import printable
from mosaic_sdk.runner.storage.store import StoreError

#: The commands of ``mosaic control`` (the protocol's, without interactive stepping).
CLI_COMMANDS = ("pause", "resume", "stop", "checkpoint", "ping")
#: Exit code when the run cannot be reached.
UNREACHABLE = 3


def register(sub: Any) -> None:
    p = sub.add_parser(
        "control",
        help="pause, resume, stop or checkpoint a running run",
        description="Send one command to a running run through its control socket and print "
        "the reply. Exit code: 0 ok, 1 the command was refused or not answered, 2 usage error, "
        "3 the run cannot be reached (ended, no socket, not yours).",
    )
    p.add_argument("run_id", metavar="RUN", help="a run id, or a unique prefix of one")
    p.add_argument("command", choices=CLI_COMMANDS, help="the command to send")
    p.add_argument("--store", metavar="PATH", help="SQLite store file (default: under MOSAIC_HOME)")
    p.add_argument("--json", action="store_true", help="print the reply as one JSON object")
    p.set_defaults(handler=cmd_control)


def _fail(args: argparse.Namespace, code: str, message: str) -> int:
    if args.json:
        print(json.dumps({"ok": False, "error": {"code": code, "message": message}}))
    else:
        print(f"mosaic: error: {message}", file=sys.stderr, flush=True)
    return UNREACHABLE


def cmd_control(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.runner.control.control_client import ControlClientError, send_command
    from mosaic_sdk.runner.control.control_socket import SOCKET_NAME

    with open_store(args) as store:
        with usage_errors(StoreError):
            run = store.get_run(args.run_id)
    rid = run["run_id"]
    if run["status"] != "running":
        ended = f"run {rid} has ended ({run['status']}); commands reach running runs only"
        return _fail(args, "run_finished", ended)
    run_dir = run["run_dir"]
    if not run_dir:
        return _fail(args, "socket_missing", f"run {rid} has no run directory in the store")
    path = Path(run_dir) / SOCKET_NAME
    started = time.perf_counter()
    try:
        reply = send_command(path, {"cmd": args.command})
    except ControlClientError as exc:
        note = ""
        if run.get("runner_alive") is False:
            note = f" (its runner, pid {run['runner_pid']}, is gone)"
        return _fail(args, exc.code, printable(f"run {rid}{note}: {exc}"))
    elapsed_ms = (time.perf_counter() - started) * 1000
    if args.json:
        print(json.dumps(reply, sort_keys=True))
    else:
        print(printable(_describe(rid, reply, elapsed_ms)), flush=True)
    return 0 if reply.get("ok") is True else 1


def _describe(rid: str, reply: dict[str, Any], elapsed_ms: float) -> str:
    cmd = reply.get("cmd") or "?"
    if reply.get("ok") is True:
        skip = {"type", "v", "id", "cmd", "ok", "run_id", "ts", "ts_unix_ns", "seq"}
        extra = ", ".join(f"{k}={v}" for k, v in sorted(reply.items()) if k not in skip)
        return f"run {rid}: {cmd}: ok{' (' + extra + ')' if extra else ''} in {elapsed_ms:.1f} ms"
    found = reply.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    who = "the runner" if reply.get("source") == "runner" else "the worker"
    text = f"run {rid}: {cmd}: refused by {who}: {error.get('code', 'error')}: "
    text += str(error.get("message", "no message"))
    if error.get("hint"):
        text += f" ({error['hint']})"
    return text
