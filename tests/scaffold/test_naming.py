"""The rules for names and texts of a new worker (mosaic_sdk.scaffold.naming)."""

from __future__ import annotations

import pytest

from mosaic_sdk.scaffold import naming

GOOD = {
    "worker_name": "Grid Walker",
    "package_name": "mosaic_worker_grid_walker",
    "distribution_name": "mosaic-worker-grid-walker",
    "worker_type": "grid_walker",
    "description": "Walks grids",
    "author": "Ada",
    "email": "ada@example.org",
    "env_id": "CartPole-v1",
    "version": "0.1.0",
}


def problems_with(**changes: object) -> list[str]:
    return naming.check_answers({**GOOD, **changes}, installed_workers={})


def test_good_answers_have_no_problem() -> None:
    assert problems_with() == []


@pytest.mark.parametrize(
    ("package", "says", "suggests"),
    [
        ("class", "Python keyword", "class_worker"),
        ("my-worker", "not a valid import name", "my_worker"),
        ("2fast", "not a valid import name", "worker_2fast"),
        ("MyWorker", "not a valid import name", "myworker"),
        ("caf\u00e9", "not a valid import name", "caf"),
        ("json", "standard library", "json_worker"),
        ("mosaic_sdk", "package of the MOSAIC SDK", "mosaic_worker_"),
        ("numpy", "popular package", "mosaic_worker_numpy"),
        ("sklearn", "popular package 'scikit-learn'", "mosaic_worker_sklearn"),
        ("", "empty", "my_worker"),
    ],
)
def test_bad_package_names_say_what_to_use(package: str, says: str, suggests: str) -> None:
    (problem,) = problems_with(package_name=package)
    assert says in problem and suggests in problem


@pytest.mark.parametrize(
    ("dist", "says"),
    [
        ("mosaic", "taken on PyPI by an unrelated project"),
        ("Mosaic_SDK", "taken on PyPI by an unrelated project"),
        ("mosaic-worker-sdk", "is a MOSAIC name; choose your own"),
        ("gym_gui", "is a MOSAIC name; choose your own"),
        ("mosaic-cleanrl", "is a MOSAIC name; choose your own"),  # the platform's CleanRL
        ("requests", "popular package 'requests'"),
        ("Scikit_Learn", "popular package 'scikit-learn'"),
        ("-lead", "not a valid package name"),
        ("caf\u00e9-worker", "not a valid package name"),
        ("a b", "not a valid package name"),
    ],
)
def test_bad_distribution_names(dist: str, says: str) -> None:
    (problem,) = problems_with(distribution_name=dist)
    assert says in problem
    assert "use e.g." in problem or "choose your own" in problem


def test_worker_type_rules() -> None:
    assert "worker of the MOSAIC SDK" in problems_with(worker_type="example")[0]
    assert "may only hold" in problems_with(worker_type="grid walker")[0]
    assert problems_with(worker_type="grid-walker.v2") == []
    installed = naming.check_answers(
        GOOD, installed_workers={"grid_walker": "mosaic-worker-grid-walker"}
    )
    assert (
        len(installed) == 1 and "already installed (from mosaic-worker-grid-walker)" in installed[0]
    )


@pytest.mark.parametrize("field", ["worker_name", "description", "author"])
def test_free_text_must_be_one_printable_line(field: str) -> None:
    assert "single line" in problems_with(**{field: "two\nlines"})[0]
    assert "U+0007" in problems_with(**{field: "bell\a"})[0]
    assert "not valid UTF-8" in problems_with(**{field: "bad\udcff"})[0]
    assert "keep it to 300" in problems_with(**{field: "x" * 301})[0]
    assert problems_with(**{field: 'O"Neil \'\'\' """ \\ \u00e9\u4e16 {{ x }}'}) == []


def test_email_env_id_and_version() -> None:
    assert problems_with(email="") == []
    assert "does not look like an address" in problems_with(email="ada at home")[0]
    assert problems_with(env_id="ALE/Pong-v5") == []
    assert "not a gymnasium env id" in problems_with(env_id="Cart Pole")[0]
    assert "PEP 440" in problems_with(version="one")[0]


def test_choices_are_checked_when_given() -> None:
    problems = naming.check_answers(
        {**GOOD, "license": "WTFPL"}, installed_workers={}, choices={"license": ["MIT"]}
    )
    assert problems == ["license 'WTFPL' is not one of MIT"]


def test_installed_worker_types_reads_entry_points() -> None:
    found = naming.installed_worker_types()
    assert found.get("example") == "mosaic-worker-example"
