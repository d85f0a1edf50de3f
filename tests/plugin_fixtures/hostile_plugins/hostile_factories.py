"""Upstream-style factories (``get_worker_metadata()`` callables) that misbehave when called."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from types import SimpleNamespace


def parses_argv():
    """As an upstream worker module that parses the command line wherever it is called."""
    parser = argparse.ArgumentParser(prog="upstream-worker")
    parser.add_argument("--config", required=True)
    parser.parse_args()  # SystemExit(2) under any mosaic command
    raise AssertionError("not reached")


def calls_sys_exit():
    sys.exit()


def raises_cancelled():
    raise asyncio.CancelledError("cancelled inside the factory")


def raises_keyboard_interrupt():
    raise KeyboardInterrupt


def never_returns():
    threading.Event().wait()


def calls_os_exit():
    os._exit(0)


def prints():
    print("HOSTILE-PRINT from a factory")
    sys.stdout.write("HOSTILE-WRITE {not json\n")
    meta = SimpleNamespace(name="Printer", version="1.0")
    caps = SimpleNamespace(worker_type="printer", supported_paradigms=["sequential"])
    return meta, caps
