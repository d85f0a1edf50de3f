"""Fixtures of the runner tests: fixture workers through MOSAIC_PLUGINS, a store per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"

PLUGINS = ",".join(
    f"{name}=runner_workers:{attr}"
    for name, attr in (("fixture", "Fixture"), ("missing", "Missing"), ("future", "Future"))
)


def _discoverable(monkeypatch: pytest.MonkeyPatch, plugins: str) -> None:
    """fixtures/ on sys.path and PYTHONPATH, ``plugins`` as MOSAIC_PLUGINS (here and in
    children)."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES) + (os.pathsep + old if old else ""))
    monkeypatch.setenv("MOSAIC_PLUGINS", plugins)


@pytest.fixture
def fixture_workers(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the fixture workers discoverable here and in child processes."""
    _discoverable(monkeypatch, PLUGINS)
    return FIXTURES


@pytest.fixture
def io_worker(monkeypatch: pytest.MonkeyPatch) -> str:
    """The ``iofixture`` worker (fixtures/io_workers.py), discoverable here and in children."""
    _discoverable(monkeypatch, "iofixture=io_workers:IoFixture")
    return "iofixture"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite"
