"""Running checks: :func:`run_check`, :func:`check_worker` and the session cache of subjects."""

from __future__ import annotations

import atexit
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping

from mosaic_sdk.conformance.registry import Check, check_expected, check_level, select_checks
from mosaic_sdk.conformance.results import (
    ADVISORY,
    ERROR,
    FAILED,
    PASSED,
    SKIPPED,
    XFAILED,
    XPASSED,
    CheckFailed,
    CheckResult,
    CheckSkipped,
)
from mosaic_sdk.conformance.subject import HookError, WorkerSubject


class ConformanceError(AssertionError):
    """Raised by ``check_worker(..., on_fail="raise")``; ``results`` holds every result."""

    def __init__(self, worker: str, results: list[CheckResult]) -> None:
        self.worker = worker
        self.results = results
        bad = [r for r in results if not r.ok]
        lines = [f"{r.name}: {r.verdict}: {r.reason}" for r in bad]
        super().__init__(
            f"worker {worker!r} failed {len(bad)} conformance check(s):\n  " + "\n  ".join(lines)
        )


class ConformanceWarning(UserWarning):
    """Issued per failed check by ``check_worker(..., on_fail="warn")``."""


class ConformanceAdvisory(UserWarning):
    """Issued by a pytest conformance item whose check is outside the level in force and
    does not pass: the item passes, the warning carries the reason and the hint."""


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_check(
    subject: WorkerSubject,
    check: Check,
    expected_failures: Mapping[str, str] | None = None,
    level: str | None = None,
) -> CheckResult:
    """Evaluate one check on one subject at ``level`` (default: the worker's own); never
    raises for a misbehaving worker. A check outside ``level`` is judged by its own rule and,
    when it does not pass, reported as an ``advisory`` (ok, with its hint)."""
    level = check_level(level) if level is not None else subject.default_level()
    started = time.perf_counter()
    details: list[str] = []
    hook_hint = ""
    try:
        gate = check.skip_reason(subject)
        if gate:
            raise CheckSkipped(gate)
        if check.needs_handle:
            subject.require_handle()
        note = check.judge(subject, level)
        verdict, reason = PASSED, note or ""
    except CheckFailed as exc:
        verdict, reason, details = FAILED, exc.reason, exc.details
    except CheckSkipped as exc:
        verdict, reason = SKIPPED, exc.reason
    except HookError as exc:  # the worker's hook raised: the reason names the hook
        verdict, reason = ERROR, str(exc)
        hook_hint = (
            f"Make {exc.hook} return without raising (call it in Python to see the "
            "traceback); every check that needs its answer reports this error"
        )
    except Exception as exc:  # noqa: BLE001 - a bug in a check or a hook: reported, not raised
        verdict, reason = ERROR, f"{type(exc).__name__}: {exc}"
    expected = (expected_failures or {}).get(check.name)
    if expected is not None:
        if verdict in (FAILED, ERROR):
            verdict, reason = XFAILED, f"expected ({expected}): {reason}"
        elif verdict == PASSED:
            verdict, reason = XPASSED, f"expected to fail ({expected}) but passed"
    if not check.in_level(level) and verdict in (FAILED, ERROR, XPASSED):
        verdict, reason = ADVISORY, f"{verdict} by the {check.rule_level(level)} rule: {reason}"
    return CheckResult(
        worker=subject.name,
        name=check.name,
        family=check.family,
        description=check.description,
        verdict=verdict,
        duration=time.perf_counter() - started,
        reason=_one_line(reason),
        hint=hook_hint
        or (check.hint_for(level) if verdict in (FAILED, ERROR, XPASSED, ADVISORY) else ""),
        details=[_one_line(d, 200) for d in details[:50]],
        level=level,
        levels=list(check.levels),
    )


def check_worker(
    name: str,
    on_fail: str | None = "raise",
    *,
    keyword: str | None = None,
    checks: Iterable[str] | None = None,
    expected_failures: Mapping[str, str] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
    level: str | None = None,
) -> list[CheckResult]:
    """Run the conformance checks (``keyword``: a ``-k`` expression, ``checks``: names) on the
    installed worker ``name`` at ``level`` (default: the worker's own; a check outside it that
    does not pass is an ok ``advisory``); return every result, each also given to ``on_result``.

    ``expected_failures`` maps check names to reasons (a failure becomes ``xfailed``, a pass
    ``xpassed``, not ok). ``on_fail="raise"`` raises :class:`ConformanceError` when a result is
    not ok, ``"warn"`` issues a :class:`ConformanceWarning` per such result. Raises
    ``UnknownWorkerError``, ``ConformanceConfigError`` (a malformed config given without the
    SDK), ``KeyError``/``ValueError`` (an unknown check or level, a bad ``keyword``).
    """
    if on_fail not in ("raise", "warn", None):
        raise ValueError(f'on_fail must be "raise", "warn" or None, not {on_fail!r}')
    if level is not None:
        check_level(level)
    selected = select_checks(keyword, checks)
    check_expected(expected_failures or {})
    results = []
    with WorkerSubject(name) as subject:
        subject.check_conformance_config()
        in_force = level or subject.default_level()
        subject.ensure_runs(subject.planned_runs(selected, in_force))
        for check in selected:
            result = run_check(subject, check, expected_failures, in_force)
            results.append(result)
            if on_result is not None:
                on_result(result)
    if on_fail == "raise" and not all(r.ok for r in results):
        raise ConformanceError(name, results)
    if on_fail == "warn":
        for r in (r for r in results if not r.ok):
            message = f"{name}: {r.name} {r.verdict}: {r.reason} (hint: {r.hint})"
            warnings.warn(message, ConformanceWarning, stacklevel=2)
    return results


# --- one subject per worker for a whole session (pytest front doors) ------------------------

_SESSION: dict[str, WorkerSubject] = {}
_SESSION_LOCK = threading.Lock()
_PLANNED: dict[str, set[str]] = {}


def session_subject(name: str) -> WorkerSubject:
    """The subject of ``name`` shared by this process (its runs are recorded once)."""
    with _SESSION_LOCK:
        if name not in _SESSION:
            _SESSION[name] = WorkerSubject(name)
        return _SESSION[name]


def plan_session(name: str, check_names: Iterable[str]) -> None:
    """Declare the checks a session will run on ``name``, so their runs are recorded together."""
    _PLANNED.setdefault(name, set()).update(check_names)


def planned_checks(name: str) -> list[Check]:
    wanted = _PLANNED.get(name)
    return [c for c in select_checks() if wanted is None or c.name in wanted]


def close_session_subjects() -> None:
    """Remove the temporary files of every session subject."""
    with _SESSION_LOCK:
        for subject in _SESSION.values():
            subject.close()
        _SESSION.clear()
        _PLANNED.clear()


atexit.register(close_session_subjects)
