"""The runner's warnings go to one reporter (mosaic_sdk.runner.reporting): ``mosaic`` prints
each as ``mosaic: warning: ...`` on stderr, and the runner used as a library prints nothing
itself (its reporter keeps them)."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import mosaic_sdk
from mosaic_sdk import hookimpl
from mosaic_sdk.cli import main
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.plugins.errors import WorkerLoadError
from mosaic_sdk.runner.control import control_socket
from mosaic_sdk.runner.reporting import Reporter, current_reporter, use_reporter
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervision import resolve
from mosaic_sdk.runner.supervision.process import WorkerProcess
from mosaic_sdk.runner.supervisor import run_worker

RUNNER = Path(mosaic_sdk.__file__).parent / "runner"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


class Broken:
    """A plugin whose every hook raises."""

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: dict[str, Any]) -> None:
        raise RuntimeError("event hook bug")

    @hookimpl
    def mosaic_run_cleanup(self, run_id: str, worker: str, run_dir: Path, exit_code: Any) -> None:
        raise RuntimeError("cleanup hook bug")

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: Any) -> None:
        raise RuntimeError("observer bug")


@pytest.fixture
def troubled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run of this test meets six things worth a warning: a plugin that failed to load,
    three hooks that raise, a stderr problem and a final status the store refuses."""

    def discover(*args: Any, **kwargs: Any) -> Any:
        registry = discover_workers(*args, **kwargs)
        registry.pm.register(Broken(), name="broken")
        registry.plugin_errors["lost"] = WorkerLoadError(
            "lost", "lost-dist", "ModuleNotFoundError", "No module named 'lost_plugin'"
        )
        return registry

    monkeypatch.setattr(resolve, "discover_workers", discover)
    monkeypatch.setattr(
        WorkerProcess, "stderr_problems", lambda self: ["the copy of stderr is incomplete (test)"]
    )
    real_finish = RunStore.finish_run

    def finish_run(self: RunStore, run_id: str, status: str, *args: Any, **kw: Any) -> None:
        if status != "running" and not getattr(self, "_refused_once", False):
            self._refused_once = True  # type: ignore[attr-defined]
            raise sqlite3.OperationalError("disk I/O error")
        real_finish(self, run_id, status, *args, **kw)

    monkeypatch.setattr(RunStore, "finish_run", finish_run)


WARNINGS = [
    "plugin 'lost' (lost-dist) failed to load: ModuleNotFoundError: No module named "
    "'lost_plugin'; runs go on without it",
    "a mosaic_telemetry_event hook raised RuntimeError: event hook bug (the run goes on)",
    "cleanup hook bug",
    "observer plugin 'broken' raised RuntimeError: observer bug",
    ": the copy of stderr is incomplete (test)",
    "the final status could not be stored (OperationalError: disk I/O error)",
]


@pytest.mark.usefixtures("fixture_workers", "troubled")
def test_mosaic_run_shows_each_warning(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "fixture", "--set", "lines=5", "--store", str(store_path), "--quiet"])
    assert code == 1  # the final status was not stored: failed
    err = capsys.readouterr().err
    shown = [line for line in err.splitlines() if line.startswith("mosaic: warning: ")]
    for text in WARNINGS:
        assert any(text in line for line in shown), (text, err)
    assert current_reporter().on_warning is None  # mosaic put the library's default back


@pytest.mark.usefixtures("fixture_workers", "troubled")
def test_the_runner_as_a_library_prints_nothing(
    store_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    reporter = Reporter()
    result = run_worker("fixture", {"lines": 5}, store=store_path, reporter=reporter)
    assert result.status == "failed"
    assert capfd.readouterr() == ("", "")
    for text in WARNINGS:
        assert any(text in w for w in reporter.warnings), (text, list(reporter.warnings))


@pytest.mark.usefixtures("fixture_workers", "troubled")
def test_without_a_reporter_the_library_default_keeps_quiet(
    store_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    quiet = Reporter()
    with use_reporter(quiet):  # stands for the process default, fresh for this test
        run_worker("fixture", {"lines": 5}, store=store_path)
    assert capfd.readouterr() == ("", "")
    assert any("event hook bug" in w for w in quiet.warnings)


def test_mosaic_run_shows_a_missing_control_socket(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv("MOSAIC_PLUGINS", "control=control_worker:Control")
    monkeypatch.setenv("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "1")
    import os

    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES) + (os.pathsep + old if old else ""))

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise control_socket.ControlSocketError("no room for a socket (test)")

    monkeypatch.setattr(control_socket, "ControlServer", refuse)
    argv = ["run", "control", "--set", "lines=3", "--set", "delay=0", "--store", str(store_path)]
    assert main([*argv, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "mosaic: warning: no control socket for this run: no room for a socket (test)" in err


def test_no_runner_module_writes_to_stderr() -> None:
    """Only cli/ talks to people: the runner reports through its reporter."""
    found = []
    for path in sorted(RUNNER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "stderr"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                found.append(f"{path.relative_to(RUNNER)}:{node.lineno}")
    assert found == [], "report through mosaic_sdk.runner.reporting instead"
