"""A conformance check that fails on a worker killed by a signal names the signal (issue 47):
"the worker was killed by signal SIGSEGV (-11)", not "exited with code -11"."""

from __future__ import annotations

import pytest

from mosaic_sdk.conformance.checks.cli import bad_config_exits_nonzero, config_runs
from mosaic_sdk.conformance.checks.telemetry import run_started_first
from mosaic_sdk.conformance.recording import RecordedRun
from mosaic_sdk.conformance.results import CheckFailed


class Subject:
    """Just enough of a WorkerSubject: the recorded runs, made up."""

    def __init__(self, run: RecordedRun) -> None:
        self._run = run

    def run(self, kind: str) -> RecordedRun:
        return self._run


def killed(kind: str = "normal") -> RecordedRun:
    run = RecordedRun(kind=kind, run_id="r")
    run.exit_code = -11
    run.stderr = "Fatal Python error: Segmentation fault\n"
    return run


def test_the_config_run_check_names_the_signal() -> None:
    with pytest.raises(CheckFailed, match=r"the worker was killed by signal SIGSEGV \(-11\)"):
        config_runs(Subject(killed()))  # type: ignore[arg-type]


def test_a_bad_config_run_killed_by_a_signal_is_reported_by_name() -> None:
    reason = bad_config_exits_nonzero(Subject(killed("bad_config")))  # type: ignore[arg-type]
    assert reason == "killed by signal SIGSEGV (-11)"


def test_a_run_without_telemetry_names_the_signal() -> None:
    with pytest.raises(CheckFailed, match=r"\(killed by signal SIGSEGV \(-11\); stderr: Fatal"):
        run_started_first(Subject(killed()))  # type: ignore[arg-type]
