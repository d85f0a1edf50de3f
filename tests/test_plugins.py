"""Discovery: entry points, upstream-style factories, broken plugins, env controls (shared
names: test_worker_choice.py)."""

from __future__ import annotations

import pytest

from mosaic_sdk.plugins import (
    UnknownWorkerError,
    UpstreamConfig,
    WorkerUnavailableError,
    discover_workers,
)

pytestmark = pytest.mark.usefixtures("plugin_fixtures")


def env(**extra: str) -> dict[str, str]:
    return {"MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1", **extra}


def test_installed_example_worker_is_discovered_through_its_entry_point() -> None:
    registry = discover_workers(environ={})
    handle = registry.get("example")
    assert handle.distribution == "mosaic-worker-example"
    assert handle.capabilities.worker_type == "example"
    assert handle.style == "plugin"


def test_one_broken_plugin_never_stops_discovery() -> None:
    registry = discover_workers(
        environ=env(
            MOSAIC_PLUGINS="good=fixture_workers:GoodWorker,"
            "broken=broken_import_worker,exits=exiting_worker,"
            "num=fixture_workers:NOT_CALLABLE"
        )
    )
    assert list(registry.workers) == ["good"]
    errors = registry.errors
    assert errors["broken"].error_type == "ModuleNotFoundError"
    assert "a_module_that_is_not_installed" in errors["broken"].message
    assert errors["broken"].distribution == "MOSAIC_PLUGINS"
    assert errors["exits"].error_type == "SystemExit"
    assert errors["num"].error_type == "TypeError"
    entries = {e["name"]: e for e in registry.entries()}
    assert entries["good"]["ok"] and not entries["broken"]["ok"]
    assert entries["broken"]["error"]["error_type"] == "ModuleNotFoundError"
    with pytest.raises(WorkerUnavailableError, match="ModuleNotFoundError"):
        registry.get("broken")


def test_worker_type_differing_from_the_entry_point_name_is_an_error() -> None:
    registry = discover_workers(
        environ=env(MOSAIC_PLUGINS="mismatch=fixture_workers:MismatchedWorker")
    )
    err = registry.errors["mismatch"]
    assert "worker_type is 'other'" in err.message and "mismatch" in err.message
    assert "mismatch" not in registry.workers
    # it was unregistered again: the plugin manager holds no half-registered worker
    assert registry.pm.get_plugin("worker:mismatch") is None


def test_invalid_description_is_an_error_of_that_worker() -> None:
    registry = discover_workers(
        environ=env(MOSAIC_PLUGINS="invalid=fixture_workers:InvalidDescription")
    )
    assert registry.errors["invalid"].error_type == "ValidationError"
    assert "max_agents" in registry.errors["invalid"].message


def test_upstream_style_factory_is_adapted() -> None:
    registry = discover_workers(
        environ=env(MOSAIC_PLUGINS="legacy=fixture_workers:upstream_factory")
    )
    handle = registry.get("legacy")
    meta, caps = handle.describe()
    assert handle.style == "upstream"
    assert meta.name == "Legacy Worker" and caps.supports_checkpointing
    assert caps.supported_paradigms == ("sequential",)
    model = handle.config_model()
    assert model is UpstreamConfig
    cfg = model.from_dict({"run_id": "r", "algorithm": "dqn", "total_steps": 10})
    assert cfg.extras == {"algorithm": "dqn", "total_steps": 10}
    from pathlib import Path

    cmd = handle.launch_command(Path("/tmp/c.json"), cfg, Path("/tmp"))
    # run as `python -m fixture_workers.cli`, through the launcher that provides gym_gui.core.worker
    assert list(cmd.argv[1:]) == [
        "-m",
        "mosaic_sdk.plugins.gym_gui_stand_in",
        "fixture_workers.cli",
        "--config",
        "/tmp/c.json",
    ]


def test_upstream_factory_returning_garbage_is_reported() -> None:
    registry = discover_workers(environ=env(MOSAIC_PLUGINS="pair=fixture_workers:not_a_pair"))
    assert "expected a (metadata, capabilities) pair" in registry.errors["pair"].message


def test_disable_workers_and_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "example" not in discover_workers(environ={"MOSAIC_DISABLE_WORKERS": "example"}).names()
    registry = discover_workers(environ=env(MOSAIC_PLUGINS="good=fixture_workers:GoodWorker"))
    assert registry.names() == ["good"]


def test_bad_mosaic_plugins_entry_is_explained() -> None:
    registry = discover_workers(environ=env(MOSAIC_PLUGINS="nonsense"))
    assert "name=module[:attr]" in registry.errors["nonsense"].message


def test_unknown_name_suggests_close_names() -> None:
    registry = discover_workers(environ={})
    with pytest.raises(UnknownWorkerError) as info:
        registry.get("exampel")
    assert info.value.suggestions[0] == "example"  # the closest first (example_ma after it)
    assert "did you mean 'example'" in str(info.value)


def test_trace_hooks_writes_hook_calls_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    registry = discover_workers(
        environ=env(MOSAIC_TRACE_HOOKS="1", MOSAIC_PLUGINS="good=fixture_workers:GoodWorker")
    )
    registry.get("good").config_model()
    assert "mosaic_worker_config_model" in capsys.readouterr().err


def test_worker_hooks_are_called_on_that_worker_only() -> None:
    registry = discover_workers(environ={"MOSAIC_PLUGINS": "good=fixture_workers:GoodWorker"})
    assert registry.get("good").metadata.name == "Good"
    assert registry.get("example").metadata.name == "Example Worker"
    # good declares no config model: the SDK's default answers
    from mosaic_sdk.contract import WorkerConfig

    assert registry.get("good").config_model() is WorkerConfig
    assert registry.get("good").protocol_version() == 1
