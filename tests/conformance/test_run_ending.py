"""A check that fails on how a recorded run ended says how it ended: its exit code, how long
it ran and who stopped it. A FastLane check once failed with only "(exit code -15)", which
did not tell a suite's own SIGTERM (after the worker closed its stdout) from anything else."""

from __future__ import annotations

from mosaic_sdk.conformance.recording import RecordedRun


def _run(**fields: object) -> RecordedRun:
    run = RecordedRun(kind="fastlane", run_id="r")
    for name, value in fields.items():
        setattr(run, name, value)
    return run


def test_a_run_that_ended_by_itself() -> None:
    assert _run(exit_code=0, started_at=10.0, exited_at=12.34).ending() == (
        "exit code 0 after 2.3 s"
    )


def test_a_run_the_suite_stopped_names_the_reason() -> None:
    run = _run(
        exit_code=-15,
        started_at=10.0,
        exited_at=21.5,
        stopped_by="the worker closed its stdout but did not exit",
    )
    assert run.ending() == (
        "killed by signal SIGTERM (-15) after 11.5 s, stopped by the suite: the worker closed its "
        "stdout but did not exit"
    )


def test_a_run_past_its_time_limit_says_it_was_killed() -> None:
    run = _run(exit_code=-9, started_at=1.0, exited_at=121.0, timed_out=True)
    assert run.ending() == (
        "killed by signal SIGKILL (-9) after 120.0 s, killed: the run took longer than its time "
        "limit"
    )


def test_a_run_that_never_started_has_no_exit_code() -> None:
    assert _run(exit_code=None).ending() == "no exit code"
