"""The list of mutations the suite must kill (tests/mutants/*.toml, scripts/mutants) stays sound:
each mutant still applies to today's code (its text occurs exactly once) and names tests that
exist. Whether the tests kill them is checked by ``scripts/mutants`` (minutes, not in CI)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def mutants_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("mosaic_mutants", str(ROOT / "scripts/mutants"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # its dataclasses look their module up
    loader.exec_module(module)
    return module


def test_every_listed_mutant_applies_to_todays_code(mutants_script: ModuleType) -> None:
    mutants = mutants_script.load_mutants()
    assert len(mutants) >= 8, "the list holds at least the issue-46 table's mutations"
    assert mutants_script.problems(mutants) == []


def test_a_stale_or_broken_entry_is_named(mutants_script: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "pkg.py").write_text("x = 1\nx = 1\n")
    (tmp_path / "t.py").write_text("")
    (tmp_path / "list.toml").write_text(
        """
[[mutant]]
name = "twice"
why = "its text occurs twice"
file = "pkg.py"
find = "x = 1"
replace = "x = 2"
tests = ["t.py"]

[[mutant]]
name = "twice"
why = "a duplicate name, a missing file and a missing test"
file = "gone.py"
find = "a"
replace = "b"
tests = ["missing.py::test_x"]
"""
    )
    wrong = mutants_script.problems(mutants_script.load_mutants(tmp_path), root=tmp_path)
    assert wrong == [
        "twice: its find text occurs 2 times in pkg.py, not once",
        "twice: the name is used twice",
        "twice: gone.py does not exist",
        "twice: test path missing.py::test_x does not exist",
    ]
