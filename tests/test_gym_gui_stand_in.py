"""``gym_gui`` when the GUI is absent: discovery and the launched worker process get the SDK's
stand-in; a real ``gym_gui`` is never shadowed; no ``gym_gui.*`` name outside the served ones
appears. (Each served module's behaviour: tests/test_gym_gui_stand_in_modules.py.)"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mosaic_sdk.contract import WorkerCapabilities as SdkCapabilities
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.plugins.gym_gui_stand_in import (
    LAUNCHER,
    GymGuiStandInFinder,
    install_gym_gui_stand_in,
    is_stand_in,
    uninstall_gym_gui_stand_in,
)
from mosaic_sdk.telemetry import classify_line, validate_line

TESTS = Path(__file__).resolve().parent


def _forget_gym_gui() -> None:
    for name in [n for n in sys.modules if n == "gym_gui" or n.startswith("gym_gui.")]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def fresh_imports() -> Iterator[None]:
    """Each test starts and ends with no finder installed and no gym_gui module imported."""
    uninstall_gym_gui_stand_in()
    _forget_gym_gui()
    saved_path = list(sys.path)
    yield
    uninstall_gym_gui_stand_in()
    _forget_gym_gui()
    sys.path[:] = saved_path


@pytest.fixture
def no_real_gui() -> None:
    import importlib.util

    if importlib.util.find_spec("gym_gui") is not None:
        pytest.skip("a real gym_gui is installed in this environment")


@pytest.fixture
def real_gui(tmp_path: Path) -> Path:
    """A fake *real* gym_gui on sys.path (and PYTHONPATH for children)."""
    root = tmp_path / "real"
    (root / "gym_gui" / "core" / "worker").mkdir(parents=True)
    (root / "gym_gui" / "__init__.py").write_text("REAL = True\n")
    (root / "gym_gui" / "core" / "__init__.py").write_text("REAL = True\n")
    (root / "gym_gui" / "core" / "worker" / "__init__.py").write_text(
        "REAL = True\nclass WorkerMetadata: pass\nclass WorkerCapabilities: pass\n"
    )
    (root / "gym_gui" / "fastlane.py").write_text("REAL = True\n")
    (root / "gym_gui" / "ui.py").write_text("REAL = True\n")
    sys.path.insert(0, str(root))
    return root


def _env(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in paths), env.get("PYTHONPATH", "")])
    return env


# --- in this process ----------------------------------------------------------------------


@pytest.mark.usefixtures("no_real_gui")
def test_the_guide_import_resolves_to_the_stand_in() -> None:
    install_gym_gui_stand_in()
    from gym_gui.core.worker import (  # type: ignore[import-not-found]
        TelemetryEmitter,
        WorkerCapabilities,
        WorkerMetadata,
    )

    for name in ("gym_gui", "gym_gui.core", "gym_gui.core.worker"):
        assert is_stand_in(sys.modules[name]), name
    from mosaic_sdk.plugins.gym_gui_stand_in import core_worker

    assert WorkerMetadata is core_worker.WorkerMetadata  # one class, whatever the name used
    assert callable(TelemetryEmitter) and dataclasses.is_dataclass(WorkerCapabilities)


@pytest.mark.usefixtures("no_real_gui")
@pytest.mark.parametrize(
    "name", ["gym_gui.foo", "gym_gui.ui", "gym_gui.core.other", "gym_gui.fastlane.other"]
)
def test_no_other_gym_gui_name_appears(name: str) -> None:
    install_gym_gui_stand_in()
    import gym_gui.core.worker  # type: ignore[import-not-found]  # noqa: F401
    import gym_gui.fastlane  # type: ignore[import-not-found]  # noqa: F401

    with pytest.raises(ModuleNotFoundError, match=name.replace(".", r"\.")):
        __import__(name)


def test_installing_twice_adds_one_finder() -> None:
    first = install_gym_gui_stand_in()
    assert install_gym_gui_stand_in() is first
    assert sum(isinstance(f, GymGuiStandInFinder) for f in sys.meta_path) == 1


@pytest.mark.parametrize("position", ["last", "first"])
def test_a_real_gym_gui_is_never_shadowed(real_gui: Path, position: str) -> None:
    finder = GymGuiStandInFinder()
    if position == "first":  # even ahead of the path finder, it defers to the real package
        sys.meta_path.insert(0, finder)
    else:
        sys.meta_path.append(finder)
    import gym_gui.core.worker  # type: ignore[import-not-found]

    assert gym_gui.core.worker.REAL and not is_stand_in(gym_gui.core.worker)
    assert Path(gym_gui.__file__).is_relative_to(real_gui)
    import gym_gui.fastlane  # type: ignore[import-not-found]

    assert gym_gui.fastlane.REAL
    with pytest.raises(ModuleNotFoundError):  # a name the real package lacks stays missing
        import gym_gui.config.paths  # type: ignore[import-not-found]  # noqa: F401


def test_the_gaps_of_a_real_gym_gui_are_not_filled(tmp_path: Path) -> None:
    root = tmp_path / "partial"
    (root / "gym_gui").mkdir(parents=True)
    (root / "gym_gui" / "__init__.py").write_text("REAL = True\n")
    sys.path.insert(0, str(root))
    install_gym_gui_stand_in()
    with pytest.raises(ModuleNotFoundError, match="gym_gui.core"):
        import gym_gui.core.worker  # type: ignore[import-not-found]  # noqa: F401


@pytest.mark.usefixtures("no_real_gui", "plugin_fixtures")
def test_discovery_lists_a_worker_importing_gym_gui(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOSAIC_PLUGINS", "guidelike=gui_importing_worker:get_worker_metadata")
    registry = discover_workers()
    assert registry.errors == {}, registry.errors
    meta, caps = registry.get("guidelike").describe()
    assert meta.upstream_library is None and caps.gpu_memory_mb is None
    assert caps.supports_checkpointing and caps.estimated_memory_mb == 512  # a default


@pytest.mark.usefixtures("plugin_fixtures")
def test_discovery_uses_a_real_gym_gui_when_there_is_one(
    real_gui: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOSAIC_PLUGINS", "guidelike=gui_importing_worker:get_worker_metadata")
    registry = discover_workers()
    # the fake real gym_gui's classes take no arguments: the worker fails on them, which
    # shows it got the real package and not the stand-in
    assert "guidelike" in registry.errors
    assert registry.errors["guidelike"].error_type == "TypeError"
    assert not is_stand_in(sys.modules["gym_gui.core.worker"])


# --- the stand-in's classes -------------------------------------------------------------


@pytest.mark.usefixtures("no_real_gui", "plugin_fixtures")
def test_stand_in_classes_have_the_platforms_shape() -> None:
    install_gym_gui_stand_in()
    import platform_shaped as ref
    from gym_gui.core.worker import WorkerCapabilities, WorkerMetadata

    for ours, theirs in (
        (WorkerMetadata, ref.PlatformMetadata),
        (WorkerCapabilities, ref.PlatformCapabilities),
    ):
        assert [(f.name, f.type) for f in dataclasses.fields(ours)] == [
            (f.name, f.type) for f in dataclasses.fields(theirs)
        ]
        assert ours.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert all(f.default is dataclasses.MISSING for f in dataclasses.fields(WorkerMetadata))
    # the defaults of the capability fields the guide leaves out are the SDK contract's
    for f in dataclasses.fields(WorkerCapabilities)[6:]:
        assert f.default == SdkCapabilities.model_fields[f.name].default, f.name
    caps = WorkerCapabilities("w", ("sequential",), ("gymnasium",), ("discrete",), ("vector",), 3)
    assert caps.is_multi_agent() and caps.supports_paradigm("sequential")
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.max_agents = 1  # type: ignore[misc]


@pytest.mark.usefixtures("no_real_gui")
def test_stand_in_emitter_writes_platform_lifecycle_lines_through_the_sdk() -> None:
    install_gym_gui_stand_in()
    from gym_gui.core.worker import TelemetryEmitter

    sink = io.StringIO()
    emitter = TelemetryEmitter("run-1", sink=sink)
    emitter.run_started({"worker_type": "w", "algo": "dqn"})
    emitter.heartbeat()
    emitter.checkpoint_saved({"checkpoint_path": "c.pt"})
    emitter.run_completed({"episodes": 0})
    lines = sink.getvalue().splitlines()
    assert len(lines) == 4
    objs = [json.loads(line) for line in lines]
    assert [o["event"] for o in objs] == [
        "run_started",
        "heartbeat",
        "checkpoint_saved",
        "run_completed",
    ]
    for text, obj in zip(lines, objs, strict=True):
        assert {"event", "payload", "run_id", "timestamp"} <= set(obj)  # the platform's shape
        assert list(obj) == sorted(obj) and ", " not in text  # compact, sorted keys
        assert classify_line(text).kind == "lifecycle"
        assert validate_line(obj) == []  # and valid SDK telemetry
    assert [o["seq"] for o in objs] == [1, 2, 3, 4]
    assert objs[0]["payload"] == {"worker_type": "w", "algo": "dqn"}


# --- the launched worker process ---------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import json, sys
    import gym_gui.core.worker as w
    try:
        import gym_gui.ui
        other = "imported"
    except ModuleNotFoundError:
        other = "missing"
    print(json.dumps({
        "stand_in": getattr(w, "__mosaic_stand_in__", False),
        "real": getattr(w, "REAL", False),
        "argv": sys.argv[1:],
        "main": __name__,
        "other": other,
        "heavy": [m for m in ("pluggy", "pydantic") if m in sys.modules],
    }))
    sys.exit(int(sys.argv[-1]))
    """
)


def _launch(tmp_path: Path, *extra_paths: Path, code: int = 0) -> tuple[int, dict]:
    pkg = tmp_path / "probe_pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text(PROBE)
    done = subprocess.run(
        [sys.executable, "-m", LAUNCHER, "probe_pkg.cli", "--config", "c.json", str(code)],
        capture_output=True,
        text=True,
        env=_env(tmp_path, *extra_paths),
        timeout=60,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.usefixtures("no_real_gui")
def test_the_launched_worker_gets_the_stand_in(tmp_path: Path) -> None:
    code, seen = _launch(tmp_path, code=3)
    assert code == 3  # the worker's exit code is the process's
    assert seen["stand_in"] is True and seen["other"] == "missing"
    assert seen["argv"] == ["--config", "c.json", "3"] and seen["main"] == "__main__"
    assert seen["heavy"] == []  # the launcher costs no pluggy / pydantic import


def test_the_launched_worker_gets_a_real_gym_gui(tmp_path: Path, real_gui: Path) -> None:
    code, seen = _launch(tmp_path, real_gui)
    assert code == 0
    assert seen["real"] is True and seen["stand_in"] is False and seen["other"] == "imported"


def test_the_launcher_without_a_module_says_how_to_use_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", LAUNCHER], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "usage:" in done.stderr and "MODULE" in done.stderr


@pytest.mark.usefixtures("no_real_gui", "plugin_fixtures")
def test_a_worker_whose_runtime_imports_gym_gui_runs_under_mosaic_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mosaic_sdk.runner import run_worker

    monkeypatch.setenv(
        "MOSAIC_PLUGINS", "emitterworker=platform_emitter_worker:get_worker_metadata"
    )
    result = run_worker(
        "emitterworker", {"steps": 4}, run_id="emit-1", store=tmp_path / "runs.sqlite"
    )
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 4 and result.counts["episodes"] == 1
    assert result.counts["events"] == 2 and result.synthesised == []
