"""What the commands that read the run store share: ``--store``, opening the store it names,
and the plain tables and times they print."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.runner.storage.paths import MosaicHomeError, default_store_path
from mosaic_sdk.runner.storage.store import RunStore, StoreError


def add_store_argument(p: argparse.ArgumentParser) -> None:
    """Give ``p`` the ``--store PATH`` option every store-reading sub-command takes (unset:
    the default store; see :func:`open_store`)."""
    p.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS, help="SQLite store file")


def open_store(args: argparse.Namespace) -> RunStore:
    """The run store of ``args.store`` (or the default store), opened read-only; a
    :class:`~mosaic_sdk.cli.UsageError` that says what to do when it is missing or unusable.
    Shared by ``mosaic runs``, ``mosaic sweep`` and ``mosaic control``."""
    explicit = getattr(args, "store", None)
    with usage_errors(MosaicHomeError, RuntimeError):  # RuntimeError: --store ~nobody/x
        path = Path(explicit).expanduser() if explicit else default_store_path()
    if not path.exists():
        where = f"--store {path}" if explicit else f"the default store {path}"
        raise UsageError(f"no runs yet: {where} does not exist (start one with `mosaic run NAME`)")
    with usage_errors(StoreError):
        return RunStore(path, readonly=True)  # reading needs no write access to the store


def format_time(ts: float | None) -> str:
    """A stored timestamp as local ``YYYY-mm-dd HH:MM:SS`` (``-`` when there is none)."""
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def print_plain_table(header: tuple[str, ...], shown: list[tuple[str, ...]]) -> None:
    """Columns padded to their widest cell, two spaces apart (cells already printable)."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *shown, strict=False)]
    for row in (header, *shown):
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
