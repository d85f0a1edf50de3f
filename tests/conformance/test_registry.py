"""The registry of checks: names, descriptions, hints, selection."""

from __future__ import annotations

import pytest

from mosaic_sdk.conformance import all_checks, describe_checks, get_check, select_checks
from mosaic_sdk.conformance.registry import FAMILIES, conformance_check, matches_keyword


def test_every_check_is_named_described_and_hinted() -> None:
    checks = all_checks()
    names = [c.name for c in checks]
    assert len(names) == len(set(names))
    for check in checks:
        assert check.family in FAMILIES
        assert check.description and "\n" not in check.description
        assert check.hint and len(check.hint) > 20
    assert [c.family for c in checks] == sorted((c.family for c in checks), key=FAMILIES.index)
    assert {row["name"] for row in describe_checks()} == set(names)


def test_the_families_the_issue_asks_for_are_all_there() -> None:
    assert {c.family for c in all_checks()} == set(FAMILIES)


@pytest.mark.parametrize(
    ("expression", "name", "selected"),
    [
        ("telemetry", "telemetry.heartbeats", True),
        ("TELEMETRY", "telemetry.heartbeats", True),
        ("telemetry and not heartbeats", "telemetry.heartbeats", False),
        ("telemetry and not heartbeats", "telemetry.seq_increasing", True),
        ("stop or hygiene", "hygiene.no_shm_leftovers", True),
        ("stop or hygiene", "cli.config_runs", False),
        ("not not cli", "cli.config_runs", True),
        ("", "cli.config_runs", True),
    ],
)
def test_keyword_selection(expression: str, name: str, selected: bool) -> None:
    assert matches_keyword(expression, get_check(name)) is selected


@pytest.mark.parametrize("expression", ["and", "cli or", "a b", "not"])
def test_bad_keyword_expressions_are_refused(expression: str) -> None:
    with pytest.raises(ValueError, match="-k"):
        select_checks(expression)


def test_unknown_names_and_bad_registrations_are_refused() -> None:
    with pytest.raises(KeyError, match="no conformance check named 'cli.nope'"):
        get_check("cli.nope")
    with pytest.raises(ValueError, match="<family>.<what>"):
        conformance_check("misc.thing", description="d", hint="h")
    with pytest.raises(ValueError, match="two conformance checks"):
        conformance_check("cli.config_runs", description="d", hint="h")(lambda s: None)
