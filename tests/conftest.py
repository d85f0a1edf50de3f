"""Shared test set-up: every test gets its own MOSAIC_HOME, so nothing touches the real home."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def isolated_mosaic_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("mosaic-home")
    monkeypatch.setenv("MOSAIC_HOME", str(home))
    return home


@pytest.fixture
def plugin_fixtures(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put tests/plugin_fixtures on sys.path and PYTHONPATH (for launched children too)."""
    path = TESTS_DIR / "plugin_fixtures"
    monkeypatch.syspath_prepend(str(path))
    import os

    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(path) + (os.pathsep + old if old else ""))
    return path
