"""``mosaic watch [--store S] [--port P] [--host H]``: the runs of a store in a browser, served
by a local web app until Ctrl-C (the ``watch`` extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.runner.storage.paths import MosaicHomeError, default_store_path

EXTRA_HINT = "mosaic watch needs the watch extra: pip install 'mosaic-worker-sdk[watch]'"


def register(sub: Any) -> None:
    p = sub.add_parser("watch", help="watch the runs of a store in a browser (live frames, curves)")
    p.add_argument("--store", metavar="PATH", help="SQLite store file (default: the default store)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8766, help="port (default 8766; 0: any free one)")
    p.add_argument(
        "--token", help="the access token (default: a new random one); printed in the URL"
    )
    p.set_defaults(handler=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    try:
        # CLI start-up time
        from mosaic_sdk.watch.app import serve
        from mosaic_sdk.watch.security import is_loopback
    except ImportError as exc:
        raise UsageError(f"{EXTRA_HINT} ({exc})") from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port number (0..65535)")
    if args.token is not None and len(args.token) < 16:
        raise UsageError("--token must be at least 16 characters (or leave it out)")
    with usage_errors(MosaicHomeError, RuntimeError):  # RuntimeError: --store ~nobody/x
        store = Path(args.store).expanduser() if args.store else default_store_path()

    def announce(url: str) -> None:
        note = "" if store.exists() else " (it does not exist yet: the page says so)"
        print(f"mosaic watch: store {store}{note}", flush=True)
        if not is_loopback(args.host):
            print("mosaic watch: listening beyond this machine; the token is required", flush=True)
        print(f"mosaic watch: open {url}", flush=True)
        print("mosaic watch: Ctrl-C stops it", flush=True)

    try:
        serve(store, host=args.host, port=args.port, token=args.token, announce=announce)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
            "pick another --port (0: any free one)"
        ) from None
    return 0
