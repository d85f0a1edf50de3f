"""The pytest plugin of the conformance suite (entry point ``pytest11: mosaic_conformance``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SHIPPED_MODULE = Path(__file__).with_name("test_worker_conformance.py").resolve()
FIXTURE = "mosaic_conformance_case"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mosaic", "MOSAIC worker conformance")
    group.addoption(
        "--mosaic-worker",
        action="append",
        default=[],
        dest="mosaic_workers",
        metavar="NAME",
        help="run the conformance suite on this installed worker (repeatable)",
    )
    group.addoption(
        "--mosaic-expect-fail",
        action="append",
        default=[],
        dest="mosaic_expect_fail",
        metavar="CHECK=REASON",
        help="treat a failure of CHECK as expected (strict xfail); repeatable",
    )
    group.addoption(
        "--mosaic-level",
        dest="mosaic_level",
        choices=("platform", "sdk"),
        help="conformance level to judge at (default: the worker's own: platform for "
        "upstream-style workers, sdk for SDK-built ones); checks outside it only advise",
    )


def parse_expected(values: list[str]) -> dict[str, str]:
    """``["check=reason", ...]`` to a dict; a missing reason is an error."""
    expected = {}
    for value in values:
        name, sep, reason = value.partition("=")
        if not sep or not name.strip() or not reason.strip():
            raise pytest.UsageError(
                f"--mosaic-expect-fail {value!r}: write CHECK=REASON, e.g. "
                "telemetry.heartbeats=not implemented yet"
            )
        expected[name.strip()] = reason.strip()
    return expected


def pytest_configure(config: pytest.Config) -> None:
    workers = config.getoption("mosaic_workers", default=None)
    if not workers:
        return
    # Imported here: every pytest session loads this plugin; the suite only when asked.
    from mosaic_sdk.conformance.api import session_subject
    from mosaic_sdk.conformance.config_source import ConformanceConfigError
    from mosaic_sdk.plugins import UnknownWorkerError, discover_workers

    known = discover_workers().names()
    for name in workers:
        if name not in known:
            raise pytest.UsageError(f"--mosaic-worker: {UnknownWorkerError(name, known)}")
        try:
            session_subject(name).check_conformance_config()
        except ConformanceConfigError as exc:
            raise pytest.UsageError(f"--mosaic-worker {name}: {exc}") from None
    parse_expected(config.getoption("mosaic_expect_fail"))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not config.getoption("mosaic_workers") and collection_path.resolve() == SHIPPED_MODULE:
        return True
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    # Imported here: every pytest session loads this plugin; the suite only when asked.
    from mosaic_sdk.conformance.cases import conformance_params

    workers = metafunc.config.getoption("mosaic_workers")
    expected = parse_expected(metafunc.config.getoption("mosaic_expect_fail"))
    try:
        params = conformance_params(
            workers, expected, level=metafunc.config.getoption("mosaic_level")
        )
    except KeyError as exc:
        raise pytest.UsageError(str(exc.args[0])) from None
    metafunc.parametrize(FIXTURE, params)


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: plan only what will run
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # Imported here: every pytest session loads this plugin; the suite only when asked.
    from mosaic_sdk.conformance.api import plan_session
    from mosaic_sdk.conformance.cases import CheckCase

    for item in items:
        params: dict[str, Any] = getattr(getattr(item, "callspec", None), "params", {})
        for case in (value for value in params.values() if isinstance(value, CheckCase)):
            plan_session(case.worker, [case.check])


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Imported here: every pytest session loads this plugin; the suite only when asked.
    from mosaic_sdk.conformance.api import close_session_subjects

    close_session_subjects()
