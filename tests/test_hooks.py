"""Each hook of mosaic_sdk.hookspecs has a test of its own here (test_hook_<name>) and an entry
in docs/reference/hookspecs.md; test_every_hook_is_tested_and_documented enforces both."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pluggy
import pytest

from mosaic_sdk import hookimpl, hookspecs
from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.plugins import create_plugin_manager, discover_workers

ROOT = Path(__file__).resolve().parents[1]


def hook_names() -> list[str]:
    return sorted(
        name
        for name, obj in vars(hookspecs).items()
        if name.startswith("mosaic_") and hasattr(obj, "mosaic_spec")
    )


def test_every_hook_is_tested_and_documented() -> None:
    names = hook_names()
    assert len(names) >= 8
    docs = (ROOT / "docs" / "reference" / "hookspecs.md").read_text()
    tests = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_hook_"):
                tests.add(node.name)
    for name in names:
        assert re.search(rf"^### `{name}", docs, re.M), f"{name} has no entry in the hook docs"
        assert any(t.startswith(f"test_hook_{name}") for t in tests), f"{name} has no test"
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert "Called by" in doc and "Return" in doc, f"{name}'s docstring is incomplete"


class Worker:
    """A complete worker plugin used by the hook tests."""

    def __init__(self, name: str = "hooky") -> None:
        self.name = name

    @hookimpl
    def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        return (
            WorkerMetadata(name="Hooky", version="0.1", license="MIT"),
            WorkerCapabilities(worker_type=self.name),
        )

    @hookimpl
    def mosaic_worker_config_model(self) -> type[WorkerConfig]:
        return HookyConfig

    @hookimpl
    def mosaic_worker_launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        return LaunchCommand(argv=("python", "-m", "hooky", "--config", str(config_path)))

    @hookimpl
    def mosaic_worker_conformance_config(self) -> dict[str, Any]:
        return {"steps": 3}

    @hookimpl
    def mosaic_worker_make_env(self, config: WorkerConfig) -> Any:
        import gymnasium

        return gymnasium.make("CartPole-v1")

    @hookimpl
    def mosaic_worker_details(self) -> dict[str, Any]:
        return {"Algorithms": [{"name": "a", "importable": True}]}

    @hookimpl
    def mosaic_worker_algo_params_schema(self, algo: str | None) -> dict[str, Any]:
        schemas = {"a": {"type": "object", "properties": {"lr": {"type": "number"}}}}
        return schemas if algo is None else {k: v for k, v in schemas.items() if k == algo}


class HookyConfig(WorkerConfig):
    steps: int = 10


def registry_with(*plugins: Any, extra: dict[str, Any] | None = None):
    pm = create_plugin_manager({})
    for p in plugins:
        pm.register(p)
    return discover_workers(
        environ={"MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1"}, extra=extra or {"hooky": Worker()}, pm=pm
    )


def test_hook_mosaic_worker_describe() -> None:
    handle = registry_with().get("hooky")
    meta, caps = handle.describe()
    assert meta.name == "Hooky" and caps.worker_type == "hooky"


def test_hook_mosaic_worker_config_model() -> None:
    handle = registry_with().get("hooky")
    assert handle.config_model() is HookyConfig

    class Bad:
        @hookimpl
        def mosaic_worker_describe(self):
            return WorkerMetadata(name="b", version="1"), WorkerCapabilities(worker_type="bad")

        @hookimpl
        def mosaic_worker_config_model(self):
            return dict

    with pytest.raises(TypeError, match="not a WorkerConfig subclass"):
        registry_with(extra={"bad": Bad()}).get("bad").config_model()


def test_hook_mosaic_worker_launch_command_can_be_wrapped(tmp_path: Path) -> None:
    class AddsProfiler:
        @hookimpl(wrapper=True)
        def mosaic_worker_launch_command(self, config_path, config, run_dir):
            cmd = yield
            return cmd.model_copy(update={"env": {**cmd.env, "PROFILE": "1"}})

    handle = registry_with(AddsProfiler()).get("hooky")
    cfg = HookyConfig(run_id="r")
    cmd = handle.launch_command(tmp_path / "c.json", cfg, tmp_path)
    assert cmd.argv[-1] == str(tmp_path / "c.json") and cmd.env == {"PROFILE": "1"}


def test_hook_mosaic_worker_conformance_config() -> None:
    assert registry_with().get("hooky").conformance_config() == {"steps": 3}


def test_hook_mosaic_worker_make_env() -> None:
    env = registry_with().get("hooky").make_env(HookyConfig(run_id="r"))
    try:
        assert env.spec.id == "CartPole-v1"
    finally:
        env.close()


def test_hook_mosaic_worker_details() -> None:
    assert registry_with().get("hooky").details()["Algorithms"][0]["name"] == "a"


def test_hook_mosaic_worker_algo_params_schema() -> None:
    handle = registry_with().get("hooky")
    assert handle.algo_params_schema()["a"]["properties"]["lr"] == {"type": "number"}
    assert list(handle.algo_params_schema("a")) == ["a"] and handle.algo_params_schema("b") == {}

    class Plain(Worker):
        mosaic_worker_algo_params_schema = None  # type: ignore[assignment]

    assert registry_with(extra={"hooky": Plain()}).get("hooky").algo_params_schema() == {}


def test_hook_mosaic_worker_protocol_version() -> None:
    assert registry_with().get("hooky").protocol_version() == hookspecs.PROTOCOL_VERSION

    class Future(Worker):
        @hookimpl
        def mosaic_worker_protocol_version(self) -> int:
            return 99

    assert registry_with(extra={"hooky": Future()}).get("hooky").protocol_version() == 99


def test_hook_mosaic_fastlane_wrap_env_first_provider_answers_and_wrappers_decorate() -> None:
    calls: list[str] = []

    class Provider:
        @hookimpl
        def mosaic_fastlane_wrap_env(self, env, run_id, settings):
            calls.append("provider")
            return ("wrapped", env, run_id, settings["video_mode"])

    class Declines:
        @hookimpl(tryfirst=True)
        def mosaic_fastlane_wrap_env(self, env, run_id, settings):
            calls.append("declines")
            return None

    class Decorator:
        @hookimpl(wrapper=True)
        def mosaic_fastlane_wrap_env(self, env, run_id, settings):
            result = yield
            return ("decorated", result)

    pm = pluggy.PluginManager("mosaic")
    pm.add_hookspecs(hookspecs)
    for p in (Provider(), Declines(), Decorator()):
        pm.register(p)
    out = pm.hook.mosaic_fastlane_wrap_env(env="E", run_id="r", settings={"video_mode": "grid"})
    assert out == ("decorated", ("wrapped", "E", "r", "grid"))
    assert calls == ["declines", "provider"]


def test_hook_mosaic_telemetry_event_reaches_every_plugin() -> None:
    seen: list[tuple[str, str]] = []

    class A:
        @hookimpl
        def mosaic_telemetry_event(self, run_id, worker, event):
            seen.append(("A", event["event"]))

    class B:
        @hookimpl
        def mosaic_telemetry_event(self, run_id, worker, event):
            seen.append(("B", event["event"]))

    registry = registry_with(A(), B())
    registry.pm.hook.mosaic_telemetry_event(
        run_id="r", worker="hooky", event={"event": "run_started"}
    )
    assert sorted(seen) == [("A", "run_started"), ("B", "run_started")]


def test_hook_mosaic_run_cleanup_is_one_to_many(tmp_path: Path) -> None:
    cleaned: list[str] = []

    class Cleaner:
        def __init__(self, tag: str) -> None:
            self.tag = tag

        @hookimpl
        def mosaic_run_cleanup(self, run_id, worker, run_dir, exit_code):
            cleaned.append(f"{self.tag}:{run_id}:{exit_code}")

    registry = registry_with(Cleaner("x"), Cleaner("y"))
    registry.pm.hook.mosaic_run_cleanup(run_id="r1", worker="hooky", run_dir=tmp_path, exit_code=-9)
    assert sorted(cleaned) == ["x:r1:-9", "y:r1:-9"]
