"""Run health: when a run's last line and last heartbeat arrived, and whether it is stalled."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from mosaic_sdk.runner.storage.records import RECOVERED_EVENT, STALLED_EVENT

#: The stall limit is this many declared heartbeat intervals.
STALL_FACTOR = 3.0
#: What ``--on-stall`` may say: mark and report only, or stop the run (it ends ``failed``).
STALL_ACTIONS = ("warn", "cancel")


def stall_limit_value(raw: Any, what: str) -> float | None:
    """``raw`` as a stall limit in seconds (None: none given; 0 or ``off``: off).
    ``ValueError`` naming ``what`` for anything but a number >= 0."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().lower() in ("off", "none", "no"):
        return 0.0
    refused = ValueError(f"{what}: give a number of seconds >= 0, or 0/off (got {raw!r})")
    if isinstance(raw, bool):
        raise refused
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise refused from None
    if not (value >= 0 and math.isfinite(value)):
        raise refused
    return value


def checked_stall_after(stall_after: float | None) -> float | None:
    """``stall_after`` as given to the runner (s; 0: off; None: from the declared heartbeat
    interval); ``ValueError`` for a negative or infinite limit."""
    if stall_after is not None and not (stall_after >= 0 and math.isfinite(stall_after)):
        raise ValueError(f"stall_after must be >= 0 seconds (0: off), got {stall_after!r}")
    return stall_after


def _interval(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value > 0 and math.isfinite(value) else None


def stall_reason(payload: dict[str, Any]) -> str:
    """The one sentence for a stalled run (its error when the stall stopped it)."""
    return (
        f"stalled: no output for {payload['silent_seconds']:g} s "
        f"(limit {payload['limit_seconds']:g} s, {payload['limit_from']})"
    )


class RunHealth:
    """The health of one run, no I/O: stalled when nothing came from the worker's stdout for
    longer than ``stall_after`` (s; 0: off), else :data:`STALL_FACTOR` times the heartbeat
    interval the worker last declared. ``clock``: the monotonic clock of the arrival times."""

    def __init__(
        self, stall_after: float | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stall_after = checked_stall_after(stall_after)
        self.started_at = clock()
        #: Arrival (monotonic) of the newest chunk of stdout lines, and of the newest heartbeat.
        self.last_line_at: float | None = None
        self.last_heartbeat_at: float | None = None
        #: The heartbeat interval the worker declared (s), if it did.
        self.declared_interval: float | None = None
        #: When the current stall was noticed (None: not stalled), and its event's payload.
        self.stalled_at: float | None = None
        self.stalled_payload: dict[str, Any] | None = None
        self._silent_from = 0.0

    @property
    def limit(self) -> float | None:
        """The stall limit in force (s), or None when there is none (yet)."""
        if self.stall_after is not None:
            return self.stall_after if self.stall_after > 0 else None
        if self.declared_interval is not None:
            return STALL_FACTOR * self.declared_interval
        return None

    @property
    def limit_from(self) -> str:
        if self.stall_after is not None:
            return "set by the runner"
        return f"{STALL_FACTOR:g} x the declared heartbeat interval {self.declared_interval:g} s"

    def describe(self, now: float) -> str | None:
        """``"stalled: no output for S s (limit L s)"`` while stalled, else None."""
        if self.stalled_at is None or self.stalled_payload is None:
            return None
        silent = now - self._silent_from
        limit = self.stalled_payload["limit_seconds"]
        return f"stalled: no output for {silent:.0f} s (limit {limit:g} s)"

    def on_events(self, events: Iterable[dict[str, Any]], arrived: float) -> None:
        """Note the heartbeats of a chunk that arrived at ``arrived``, and the heartbeat
        interval a ``heartbeat`` or ``run_started`` payload declares."""
        for event in events:
            name = event.get("event")
            payload = event.get("payload")
            if name == "heartbeat":
                self.last_heartbeat_at = arrived
                key = "interval"
            elif name == "run_started":
                key = "heartbeat_interval"
            else:
                continue
            if isinstance(payload, dict):
                declared = _interval(payload.get(key))
                if declared is not None:
                    self.declared_interval = declared

    def check(self, now: float) -> dict[str, Any] | None:
        """The payload of a :data:`STALLED_EVENT` or :data:`RECOVERED_EVENT` (its ``event``
        key says which) when the run's state changed at ``now``, else None."""
        last = self.last_line_at
        if self.stalled_at is not None:
            if last is not None and last > self.stalled_at:
                silent = last - self._silent_from
                self.stalled_at = self.stalled_payload = None
                return {"event": RECOVERED_EVENT, "silent_seconds": round(silent, 3)}
            return None
        limit = self.limit
        if limit is None:
            return None
        since = self.started_at if last is None else last
        silent = now - since
        if silent < limit:
            return None
        self.stalled_at = now
        self._silent_from = since
        wall = time.time()
        beat = self.last_heartbeat_at
        payload = {
            "event": STALLED_EVENT,
            "silent_seconds": round(silent, 3),
            "limit_seconds": limit,
            "limit_from": self.limit_from,
            "last_line_unix": None if last is None else round(wall - (now - last), 3),
            "last_heartbeat_unix": None if beat is None else round(wall - (now - beat), 3),
            "heartbeat_interval": self.declared_interval,
        }
        self.stalled_payload = payload
        return payload
