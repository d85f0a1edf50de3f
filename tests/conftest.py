"""Shared test set-up: every test gets its own MOSAIC_HOME, so nothing touches the real home."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

#: Tests that need the heavy part of the test environment (torch, Ray, a browser, fresh
#: virtual environments with pip installs): marked ``heavy``, so ``./scripts/test --quick``
#: (``-m "not heavy"``) leaves them out. The full run (``./scripts/test``, CI) runs them.
HEAVY: dict[str, str] = {
    "worker_cleanrl/": "torch and CleanRL's algorithms",
    "sweeps/test_ray.py": "Ray Tune: starts Ray instances",
    "watch/test_browser.py": "a headless Chromium",
    "watch/test_charts_browser.py": "a headless Chromium",
    "scaffold/test_end_to_end.py": "fresh virtual environments and pip installs",
}


def heavy_reason(path: Path) -> str | None:
    """Why the test file at ``path`` is heavy, or None."""
    relative = path.resolve().relative_to(TESTS_DIR).as_posix()
    return next((why for prefix, why in HEAVY.items() if relative.startswith(prefix)), None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if heavy_reason(item.path) is not None or item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.heavy)


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
