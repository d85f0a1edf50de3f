"""Stop: SIGTERM ends the worker in time with run_cancelled, and leaves no process behind."""

from __future__ import annotations

from mosaic_sdk.conformance.checks.cli import launched
from mosaic_sdk.conformance.recording import RecordedRun
from mosaic_sdk.conformance.registry import conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import STOP_TIMEOUT, WorkerSubject, stop_timeout
from mosaic_sdk.telemetry.emitter import TERMINAL_EVENTS


def _signalled(subject: WorkerSubject) -> RecordedRun:
    run = launched(subject, "stop")
    if run.signal_sent_at is None:
        raise CheckFailed(
            "the run ended before SIGTERM could be sent (it finished in "
            f"{(run.exited_at or run.started_at) - run.started_at:.2f} s, events: "
            f"{', '.join(run.events()) or 'none'}); make the conformance config run for >= 1 s"
        )
    return run


@conformance_check(
    "stop.sigterm_exits",
    description=f"SIGTERM during a run ends the worker within {STOP_TIMEOUT:g} s "
    "(MOSAIC_CONFORMANCE_STOP_TIMEOUT)",
    hint="Handle SIGTERM (worker_main sets ctx.cancel; check ctx.cancelled in your loop and "
    "return); forward it to child processes and wait for them",
    runs=("stop",),
)
def sigterm_exits(subject: WorkerSubject) -> str | None:
    run = _signalled(subject)
    if run.killed_after_grace:
        raise CheckFailed(f"the worker was still running {stop_timeout():g} s after SIGTERM")
    assert run.signal_sent_at is not None
    took = (run.exited_at or run.signal_sent_at) - run.signal_sent_at
    return f"exited {took:.2f} s after SIGTERM with code {run.exit_code}"


@conformance_check(
    "stop.run_cancelled",
    description="A run stopped by SIGTERM ends its telemetry with run_cancelled",
    hint="When ctx.cancelled is set, stop and emit run_cancelled(reason=..., "
    "completed_episodes=...) as the last line (worker_main does if you just return)",
    runs=("stop",),
)
def run_cancelled(subject: WorkerSubject) -> str | None:
    run = _signalled(subject)
    terminal = [e for e in run.events() if e in TERMINAL_EVENTS]
    if not terminal:
        raise CheckFailed("no terminal event after SIGTERM (expected run_cancelled)")
    if terminal[-1] != "run_cancelled" or run.telemetry[-1].event != "run_cancelled":
        raise CheckFailed(f"the run ended with {terminal[-1]}, not run_cancelled, after SIGTERM")
    return None


@conformance_check(
    "stop.no_orphans",
    description="After a SIGTERM stop no process started by the worker is left running",
    hint="Terminate and wait for every child process before exiting (e.g. in a finally: "
    "block); do not detach children from the worker's session",
    runs=("stop",),
)
def no_orphans(subject: WorkerSubject) -> str | None:
    run = launched(subject, "stop")
    if run.leftover_pids or run.stdout_held_open:
        pids = ", ".join(map(str, run.leftover_pids)) or "unknown"
        raise CheckFailed(
            f"processes of the run were still alive after the worker exited (pids {pids}); "
            "the suite ended them",
            details=[str(p) for p in run.leftover_pids],
        )
    return None
