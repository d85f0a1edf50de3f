"""Stop: SIGTERM ends the worker in time with run_cancelled, and leaves no process behind."""

from __future__ import annotations

from mosaic_sdk.conformance.checks.cli import launched
from mosaic_sdk.conformance.recording import RecordedRun
from mosaic_sdk.conformance.registry import PLATFORM, SDK, conformance_check
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


def _died(run: RecordedRun) -> str:
    """How a worker that exited non-zero after SIGTERM ended, with the tail of its stderr (a
    handler that died, e.g. of a reentrant write, says so there); nothing for a clean exit."""
    if run.exit_code in (0, None) or run.killed_after_grace:
        return ""
    how = f"the worker exited with code {run.exit_code}"
    if run.exit_code < 0:
        how = f"the worker died of signal {-run.exit_code} (exit code {run.exit_code})"
    excerpt = run.stderr_excerpt()
    return f"; {how}" + (f", its stderr ends: {excerpt}" if excerpt else ", nothing on stderr")


@conformance_check(
    "stop.sigterm_exits",
    description=f"SIGTERM during a run ends the worker within {STOP_TIMEOUT:g} s "
    "(MOSAIC_CONFORMANCE_STOP_TIMEOUT)",
    hint={
        PLATFORM: "Handle SIGTERM: install a handler (signal.signal(signal.SIGTERM, ...)) that "
        "makes your loop stop, never ignore the signal; forward it to child processes and "
        "wait for them",
        SDK: "Handle SIGTERM (worker_main sets ctx.cancel; check ctx.cancelled in your loop and "
        "return); forward it to child processes and wait for them",
    },
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
    description="A run stopped by SIGTERM ends its telemetry with a terminal event that is "
    "not run_completed (platform), with run_cancelled (sdk)",
    hint={
        PLATFORM: "In the SIGTERM handler only set a flag (e.g. self.stopping = True); let the "
        "loop see it, stop and print a run_cancelled lifecycle line "
        '({"event": "run_cancelled", "payload": {"reason": ..., "completed_episodes": ...}, '
        '"run_id": ..., "timestamp": ...}, flush=True) as the last line, then exit. Never '
        "print from the handler: it runs in the middle of whatever the loop was doing, a write "
        "to stdout included (RuntimeError: reentrant call)",
        SDK: "When ctx.cancelled is set, stop and emit run_cancelled(reason=..., "
        "completed_episodes=...) from the loop as the last line (worker_main does if you just "
        "return); a SIGTERM handler of your own only sets a flag, never emits (a write it "
        "interrupts fails: RuntimeError: reentrant call)",
    },
    runs=("stop",),
)
def run_cancelled(subject: WorkerSubject, level: str) -> str | None:
    run = _signalled(subject)
    terminal = [e for e in run.events() if e in TERMINAL_EVENTS]
    if not terminal:
        raise CheckFailed(f"no terminal event after SIGTERM (expected run_cancelled){_died(run)}")
    last = run.telemetry[-1].event
    if last not in TERMINAL_EVENTS:
        raise CheckFailed(
            f"after SIGTERM the last line is {last or 'a step'}, not run_cancelled{_died(run)}"
        )
    if level == PLATFORM:
        if last == "run_completed":
            raise CheckFailed(
                "the run ended with run_completed after SIGTERM: the signal did not stop it"
            )
        return f"ended with {last}"
    if last != "run_cancelled":
        raise CheckFailed(f"the run ended with {last}, not run_cancelled, after SIGTERM")
    return None


@conformance_check(
    "stop.no_orphans",
    description="After a SIGTERM stop no process started by the worker is left running",
    hint="Terminate and wait for every child process before exiting (e.g. in a finally: "
    "block); do not detach children from the worker's session",
    runs=("stop",),
    levels=(SDK,),
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
