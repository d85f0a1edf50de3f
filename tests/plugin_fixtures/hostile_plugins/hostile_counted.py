"""A working worker that notes each import of its module (pid and sys.argv) in the file named
by HOSTILE_IMPORT_LOG: how the tests see where and how often discovery loaded it."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

_log = os.environ.get("HOSTILE_IMPORT_LOG")
if _log:
    with open(_log, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()} {' '.join(sys.argv[1:3])}\n")


def get_worker_metadata():
    meta = SimpleNamespace(name="Counted", version="1.0")
    caps = SimpleNamespace(worker_type="counted", supported_paradigms=["sequential"])
    return meta, caps
