"""Installing the platform guide's worker package (tests/plugin_fixtures/guide_package) for
tests: pip into a fresh target directory, importable here and in child processes. The pip
step, the child environment and the `mosaic` child serve the other guides' tests too."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.plugins.gym_gui_stand_in import uninstall_gym_gui_stand_in
from mosaic_sdk.runner.supervisor import RunResult, RunSupervisor

GUIDE_PACKAGE = Path(__file__).resolve().parent / "plugin_fixtures" / "guide_package"


def pip_install(source: Path, target: Path) -> None:
    """`pip install` one local package (no deps, no index) into the directory ``target``."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def site_env(site: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a child that imports from ``site`` (first on
    PYTHONPATH), without MOSAIC_PLUGINS, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "MOSAIC_PLUGINS"}
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(site) + (os.pathsep + old if old else "")
    env.update(extra)
    return env


def on_path(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``site`` first on sys.path here and on PYTHONPATH for children, with no stale
    ``my_worker`` modules imported from elsewhere; all undone when the test ends."""
    for name in [m for m in sys.modules if m == "my_worker" or m.startswith("my_worker.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(site))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(site) + (os.pathsep + old if old else ""))


@pytest.fixture(scope="module")
def guide_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install` of a copy of the guide's package into a fresh target directory."""
    work = tmp_path_factory.mktemp("guide")
    source = work / "src"
    shutil.copytree(GUIDE_PACKAGE, source)  # the build writes into its source tree
    target = work / "site"
    pip_install(source, target)
    assert list(target.glob("my_worker-1.0.0.dist-info"))
    return target


@pytest.fixture
def installed(guide_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The guide's package importable here and in children; no gym_gui anywhere."""
    uninstall_gym_gui_stand_in()
    import importlib.util

    if importlib.util.find_spec("gym_gui") is not None:
        pytest.skip("a real gym_gui is installed in this environment")
    on_path(guide_site, monkeypatch)
    monkeypatch.delenv("MOSAIC_PLUGINS", raising=False)
    return guide_site


def mosaic(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m mosaic_sdk.cli ARGS`` in a child, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def rows(store: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def when_steps_stored(
    sup: RunSupervisor, store: Path, count: int, act: Callable[[int], None]
) -> threading.Thread:
    """Call ``act(worker_pid)`` once ``count`` step lines of the run are in the store."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                [(n,)] = rows(store, "SELECT count(*) FROM steps WHERE run_id = ?", sup.run_id)
                [(pid,)] = rows(store, "SELECT worker_pid FROM runs WHERE run_id = ?", sup.run_id)
            except (sqlite3.OperationalError, ValueError):
                n, pid = 0, None
            if n >= count and pid:
                act(pid)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def run_interrupted(
    store: Path, run_id: str, steps: int, act: Callable[[RunSupervisor, int], None]
) -> RunResult:
    """A long run (100k steps) of the installed ``myworker`` with ``grace=10``; once ``steps``
    step lines are stored, ``act(supervisor, worker_pid)`` (cancel it, kill the worker...)."""
    sup = RunSupervisor(
        discover_workers().get("myworker"),
        {"total_steps": 100_000},
        run_id=run_id,
        store=store,
        grace=10,
    )
    watcher = when_steps_stored(sup, store, steps, lambda pid: act(sup, pid))
    result = sup.run()
    watcher.join(5)
    return result
