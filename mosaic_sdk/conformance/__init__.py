"""The conformance suite: one generator of checks that proves a worker honours the contract."""

from __future__ import annotations

from mosaic_sdk.conformance.api import (
    ConformanceAdvisory,
    ConformanceError,
    ConformanceWarning,
    check_worker,
    run_check,
)
from mosaic_sdk.conformance.cases import CheckCase, parametrize_with_checks
from mosaic_sdk.conformance.config_source import ConformanceConfigError
from mosaic_sdk.conformance.registry import (
    LEVELS,
    Check,
    all_checks,
    conformance_check,
    describe_checks,
    get_check,
    select_checks,
)
from mosaic_sdk.conformance.results import (
    ADVISORY,
    VERDICTS,
    CheckFailed,
    CheckResult,
    CheckSkipped,
)
from mosaic_sdk.conformance.subject import WorkerSubject

__all__ = [
    "ADVISORY",
    "LEVELS",
    "VERDICTS",
    "Check",
    "CheckCase",
    "CheckFailed",
    "CheckResult",
    "CheckSkipped",
    "ConformanceAdvisory",
    "ConformanceConfigError",
    "ConformanceError",
    "ConformanceWarning",
    "WorkerSubject",
    "all_checks",
    "check_worker",
    "conformance_check",
    "describe_checks",
    "get_check",
    "parametrize_with_checks",
    "run_check",
    "select_checks",
]
