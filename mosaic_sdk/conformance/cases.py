"""Conformance checks as pytest parameters: :class:`CheckCase` and
:func:`parametrize_with_checks` (pytest is imported only when they are used)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mosaic_sdk.conformance.api import (
    ConformanceAdvisory,
    planned_checks,
    run_check,
    session_subject,
)
from mosaic_sdk.conformance.config_source import ConformanceConfigError
from mosaic_sdk.conformance.registry import check_expected, check_level, get_check, select_checks
from mosaic_sdk.conformance.results import ADVISORY, ERROR, FAILED, SKIPPED, CheckResult


@dataclass(frozen=True)
class CheckCase:
    """One check on one worker, as a pytest parameter: calling it runs the check, skips the
    test when the check does not apply and fails it (with the reason and the hint) when the
    worker does not conform. A check outside ``level`` (default: the worker's own) passes with
    a :class:`~mosaic_sdk.conformance.api.ConformanceAdvisory` warning instead of failing."""

    worker: str
    check: str
    level: str | None = None

    @property
    def id(self) -> str:
        return f"{self.worker}-{self.check}"

    def __call__(self) -> CheckResult:
        import pytest  # pytest is not a dependency of the SDK: only under pytest

        subject = session_subject(self.worker)
        try:
            subject.check_conformance_config()
        except ConformanceConfigError as exc:
            pytest.fail(str(exc), pytrace=False)
        subject.ensure_runs(subject.planned_runs(planned_checks(self.worker)))
        result = run_check(subject, get_check(self.check), level=self.level)
        if result.verdict == ADVISORY:
            outside = f"{self.id}: advisory (outside level {result.level})"
            message = f"{outside}: {result.reason}; hint: {result.hint}"
            warnings.warn(message, ConformanceAdvisory, stacklevel=2)
        if result.verdict == SKIPPED:
            pytest.skip(result.reason)
        if result.verdict in (FAILED, ERROR):
            detail = "".join(f"\n  {d}" for d in result.details[:10])
            pytest.fail(
                f"{self.id}: {result.verdict}: {result.reason}{detail}\nhint: {result.hint}",
                pytrace=False,
            )
        return result

    def __repr__(self) -> str:
        return f"CheckCase({self.id})"


def conformance_params(
    workers: Iterable[str],
    expected_failures: Mapping[str, str] | None = None,
    *,
    keyword: str | None = None,
    level: str | None = None,
) -> list[Any]:
    """``pytest.param(CheckCase, id=..., marks=...)`` for every worker and selected check.

    ``expected_failures`` keys are check names or case ids (``worker-check``); each becomes a
    strict xfail, except for a check outside an explicit ``level`` (it cannot fail).
    """
    import pytest  # pytest is not a dependency of the SDK: only under pytest

    if level is not None:
        check_level(level)
    checks = select_checks(keyword)
    workers = list(workers)
    expected = dict(expected_failures or {})
    check_expected(expected, {f"{w}-{c.name}" for w in workers for c in select_checks()})
    params = []
    for worker in workers:
        for check in checks:
            case = CheckCase(worker, check.name, level)
            reason = expected.get(case.id, expected.get(check.name))
            if level is not None and not check.in_level(level):
                reason = None
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def parametrize_with_checks(
    workers: Iterable[str],
    expected_failures: Mapping[str, str] | None = None,
    *,
    keyword: str | None = None,
    level: str | None = None,
) -> Any:
    """A ``pytest.mark.parametrize`` over every (worker, check), for a worker's own tests.

    The decorated test receives ``check``, a :class:`CheckCase`; calling it runs the check::

        from mosaic_sdk.conformance import parametrize_with_checks

        @parametrize_with_checks(["my-worker"], expected_failures={
            "telemetry.heartbeats": "heartbeats land in 0.3",
        })
        def test_conformance(check):
            check()

    Ids look like ``my-worker-telemetry.seq_increasing``, so ``-k`` selects checks. Expected
    failures become strict xfails. ``level`` (default: each worker's own) is the level judged
    at: checks outside it pass with a ``ConformanceAdvisory`` warning when they would fail.
    """
    import pytest  # pytest is not a dependency of the SDK: only under pytest

    return pytest.mark.parametrize(
        "check", conformance_params(workers, expected_failures, keyword=keyword, level=level)
    )
