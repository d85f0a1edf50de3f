"""Fixtures of the CleanRL worker tests: a base directory for run directories."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: trains for real (tens of seconds); runs in CI, deselect with -m 'not slow'",
    )
