"""Hygiene: no shared-memory segment and no process of a run outlives its worker."""

from __future__ import annotations

from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject

RUNS = ("normal", "dry_run", "bad_config")


def _runs(subject: WorkerSubject) -> list:  # type: ignore[type-arg]
    subject.ensure_runs(RUNS)
    return [r for r in subject.recorded_runs() if not r.launch_error]


@conformance_check(
    "hygiene.no_shm_leftovers",
    description="No shared-memory segment named after a run is left once its worker exited",
    hint="Close and unlink every segment you create (FastLane writers do on close); use "
    "try/finally so that a failing run cleans up too",
    runs=RUNS,
    levels=(SDK,),
)
def no_shm_leftovers(subject: WorkerSubject) -> str | None:
    left = [f"{r.kind}: /dev/shm/{n}" for r in _runs(subject) for n in r.leftover_shm]
    if left:
        raise CheckFailed(
            f"segments left after exit (the suite removed them): {', '.join(left)}", details=left
        )
    return None


@conformance_check(
    "hygiene.no_leftover_processes",
    description="No process started by the worker outlives it in any recorded run",
    hint="Wait for every child process before exiting; a library's worker pool must be "
    "closed (pool.close(); pool.join())",
    runs=RUNS,
    levels=(SDK,),
)
def no_leftover_processes(subject: WorkerSubject) -> str | None:
    left = [
        f"{r.kind}: pid {p}" for r in _runs(subject) if r.kind != "stop" for p in r.leftover_pids
    ]
    held = [r.kind for r in _runs(subject) if r.kind != "stop" and r.stdout_held_open]
    if left or held:
        listing = ", ".join(left) or f"stdout held open in {', '.join(held)}"
        raise CheckFailed(
            f"processes outlived the worker (the suite ended them): {listing}", details=left
        )
    return None
