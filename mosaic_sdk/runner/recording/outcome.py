"""How a run ended: :class:`RunResult`, and :func:`decide`: the status from the worker's
terminal event, exit code and any cancel, and the event to write when the worker did not say."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mosaic_sdk.exit_status import describe_exit
from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage.records import AgentSummary, ObserverRecord, RunCounts
from mosaic_sdk.telemetry.emitter import SCHEMA_VERSION

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.store import RunStore

#: Exit code of ``mosaic run`` per final status.
EXIT_CODES = {"completed": 0, "failed": 1, "cancelled": 130}


@dataclass
class RunResult:
    """How a run ended. ``exit_code`` is the worker's (negative: killed by that signal)."""

    run_id: str
    worker: str
    status: str
    exit_code: int | None
    run_dir: Path
    store_path: Path
    counts: RunCounts
    error: str | None = None
    duration_seconds: float = 0.0
    synthesised: list[str] = field(default_factory=list)
    store_error: str | None = None
    #: Rows the store could not take (a run with lost rows is ``failed``).
    lost_rows: int = 0
    #: Lines stored as raw log lines (``kind = 'unstored'``) because their table refused them.
    degraded_rows: int = 0
    #: Transactions the store writer committed for this run (one per batch).
    transactions: int = 0
    #: Env steps: the step lines, or the episodes' step counts when step lines are throttled.
    env_steps: int = 0
    #: Problems of the runner that did not change the status (e.g. stderr.log incomplete).
    warnings: list[str] = field(default_factory=list)
    #: One report per observer plugin.
    observers: list[ObserverRecord] = field(default_factory=list)
    #: Multi-agent runs: steps, episodes and returns per agent (``RunStore.agents``); [] else.
    agents: list[AgentSummary] = field(default_factory=list)

    @property
    def runner_exit_code(self) -> int:
        """What ``mosaic run`` exits with: 0 completed, 1 failed, 130 cancelled."""
        return EXIT_CODES.get(self.status, 1)


@dataclass
class Outcome:
    status: str
    error: str | None
    synthesised: dict[str, Any] | None


def lifecycle_event(run_id: str, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A lifecycle event in the emitter's shape, flagged ``synthesised`` (it has no ``seq``)."""
    now_ns = time.time_ns()
    return {
        "event": event,
        "payload": payload,
        "run_id": run_id,
        "schema_version": SCHEMA_VERSION,
        "synthesised": True,
        "timestamp": now_ns / 1e9,
        "ts_unix_ns": now_ns,
        "type": "lifecycle",
    }


def failed_event(
    run_id: str, error: str, error_type: str, exit_code: int | None, stderr_tail: str = ""
) -> dict[str, Any]:
    """A synthesised ``run_failed`` event with the emitter's payload fields."""
    payload = {
        "error": error,
        "error_type": error_type,
        "exit_code": exit_code,
        "stderr_tail": stderr_tail,
        "traceback": None,
        "episode": None,
        "step": None,
    }
    return lifecycle_event(run_id, "run_failed", payload)


def decide(
    run_id: str,
    *,
    terminal: dict[str, Any] | None,
    exit_code: int | None,
    cancel_reason: str | None,
    stderr_tail: str,
    episodes: int,
    start_error: str | None = None,
    telemetry_lines: int = 0,
    other_lines: int = 0,
    timed_out: str | None = None,
    stalled: str | None = None,
) -> Outcome:
    """The final status of a run, and the event to synthesise (or None): ``completed`` when the
    worker wrote ``run_completed`` and exited 0; else ``failed`` when stopped for its time or
    stall limit (``timed_out`` / ``stalled``: the reason); else a cancelled run is ``failed``
    when the worker said so, else ``cancelled``; else the worker's terminal event decides; a
    crash, a kill or no terminal event is ``failed`` with a synthesised ``run_failed``."""
    name = terminal.get("event") if terminal else None
    payload = terminal.get("payload") if terminal else None
    worker_error = payload.get("error") if isinstance(payload, dict) else None
    how = describe_exit(exit_code)
    if name == "run_completed" and exit_code == 0:
        return Outcome("completed", None, None)
    limit_hit = timed_out if timed_out is not None else stalled
    if limit_hit is not None:
        error = f"{limit_hit}; the worker {how}"
        kind = "TimedOut" if timed_out is not None else "Stalled"
        if name == "run_failed":
            return Outcome("failed", error, None)
        return Outcome("failed", error, failed_event(run_id, error, kind, exit_code, stderr_tail))
    if cancel_reason is not None:
        if name == "run_failed":
            return Outcome("failed", str(worker_error or "the worker reported run_failed"), None)
        error = f"cancelled ({cancel_reason}); the worker {how}"
        if name == "run_cancelled":
            return Outcome("cancelled", error, None)
        event = lifecycle_event(
            run_id,
            "run_cancelled",
            {
                "reason": cancel_reason,
                "completed_episodes": episodes,
                "exit_code": exit_code,
                "by": "mosaic run",
            },
        )
        return Outcome("cancelled", error, event)
    if name == "run_failed":
        return Outcome(
            "failed", str(worker_error or f"the worker reported run_failed; it {how}"), None
        )
    if name == "run_cancelled":
        return Outcome("cancelled", f"the worker reported run_cancelled; it {how}", None)
    if start_error is not None:
        error = start_error
    elif name == "run_completed":
        error = f"the worker wrote run_completed but then {how}"
    elif exit_code == 0:
        error = (
            "the worker exited with code 0 without writing run_completed "
            f"({telemetry_lines} telemetry line(s), {other_lines} other line(s) on stdout); "
            "a worker must end with run_completed, e.g. TelemetryEmitter.run_completed()"
        )
    else:
        error = f"the worker {how} without writing run_failed"
    last = [line for line in stderr_tail.splitlines() if line.strip()]
    if last and start_error is None:
        error += f"; last stderr line: {last[-1].strip()[:200]}"
    kind = "WorkerStartError" if start_error else "WorkerDied"
    return Outcome("failed", error, failed_event(run_id, error, kind, exit_code, stderr_tail))


def record_end(
    store: RunStore,
    run_id: str,
    outcome: Outcome,
    exit_code: int | None,
    lost_rows: int,
    store_error: BaseException | None,
    warn: Callable[[str], None] | None = None,
) -> tuple[str, str | None, RunCounts]:
    """Write the final status of a run into ``store``; returns the status, the error and the
    stored counts. Lost rows make it ``failed``; a final status the store does not take is
    told to ``warn`` and put in the error, never raised."""
    status, error = outcome.status, outcome.error
    if lost_rows > 0:
        why = (
            f"{type(store_error).__name__}: {store_error}" if store_error else "the writer stopped"
        )
        failure = f"storing the run failed ({why}); {lost_rows} rows lost"
        status, error = "failed", (error + "; " if error else "") + failure
    # what is given back when the store cannot say: zeros (no multi-agent counts)
    zeros = dict.fromkeys(RunCounts.__annotations__, 0)
    counts = cast(RunCounts, zeros | {"games": None, "agent_episodes": None})
    try:
        store.finish_run(run_id, status, exit_code, error, lost_rows=lost_rows)
        counts = store.get_run(run_id)["counts"]
    except Exception as exc:  # noqa: BLE001 - sqlite3.Error or StoreError: say it, go on
        note = f"the final status could not be stored ({type(exc).__name__}: {exc})"
        status, error = "failed", (error + "; " if error else "") + note
        (warn or current_reporter().warn)(f"run {run_id}: {note}")
    return status, error, counts
