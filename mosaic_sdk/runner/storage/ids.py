"""Run ids: ULIDs (26 characters, Crockford base32, sortable by creation time)."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_run_id(now_ms: int | None = None) -> str:
    """A new ULID: 48 bits of milliseconds since the epoch, then 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join(_ALPHABET[(value >> (5 * i)) & 31] for i in reversed(range(26)))
