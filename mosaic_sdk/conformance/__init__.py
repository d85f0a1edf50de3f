"""The conformance suite: one generator of checks that proves a worker honours the contract.

Front doors, all fed by the same registry of checks (:mod:`.registry`):

- ``mosaic conformance NAME`` (table or ``--json``; exit 0 only when every check of the level
  passes or fails as expected);
- ``pytest --pyargs mosaic_sdk.conformance --mosaic-worker NAME`` (pytest plugin, one test
  item per check);
- :func:`parametrize_with_checks` for a worker's own test suite;
- :func:`check_worker` for programs (a GUI's "validate worker" button).

Each takes a level: ``platform`` (what the deployed platform needs) or ``sdk`` (every check),
by default the worker's own (``platform`` for upstream-style workers); checks outside it are
advisories. See ``docs/reference/conformance.md`` for every check and
``docs/guides/conformance.md``.
"""

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
