"""Every FastLane wrap goes through the ``mosaic_fastlane_wrap_env`` hook, as documented.

A plugin registered with a ``wrapper=True`` implementation sees (and may decorate) the env of
the example worker, of a worker baked from the template and of ``maybe_wrap_env`` itself;
importing the FastLane library still does not import pluggy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk import hookimpl
from mosaic_sdk.fastlane import FastLaneTelemetryWrapper
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.plugins import create_plugin_manager, maybe_wrap_env
from mosaic_sdk.plugins.fastlane_provider import fastlane_plugin_manager, wrap_env_through_hook
from mosaic_sdk.scaffold import bake
from mosaic_sdk.shm.segment import shm_unlink


class WrapSpy:
    """Decorates every FastLane wrap: records the call and marks the result."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl(wrapper=True)
    def mosaic_fastlane_wrap_env(self, env: Any, run_id: str, settings: dict[str, Any]) -> Any:
        self.calls.append((run_id, dict(settings)))
        wrapped = yield
        wrapped.decorated_by_spy = True
        return wrapped


@pytest.fixture
def spy() -> Iterator[WrapSpy]:
    plugin = WrapSpy()
    pm = fastlane_plugin_manager()
    pm.register(plugin)
    try:
        yield plugin
    finally:
        pm.unregister(plugin)


@pytest.fixture
def run_id() -> Iterator[str]:
    rid = f"hook-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        yield rid
    finally:
        shm_unlink(segment_name(rid))  # by exact name, whatever the test did


def test_maybe_wrap_env_goes_through_the_hook(spy: WrapSpy, run_id: str) -> None:
    import gymnasium

    env = maybe_wrap_env(
        gymnasium.make("CartPole-v1", render_mode="rgb_array"),
        environ={"MOSAIC_FASTLANE": "1", "MOSAIC_RUN_ID": run_id},
    )
    try:
        assert isinstance(env, FastLaneTelemetryWrapper)
        assert env.decorated_by_spy is True
        assert [rid for rid, _ in spy.calls] == [run_id]
        keys = {"video_mode", "slot", "grid_limit", "interval_ms", "max_dim"}
        assert set(spy.calls[0][1]) == keys
    finally:
        env.close()
    bare = object()
    assert maybe_wrap_env(bare, run_id, environ={}) is bare  # off: the hook is not called
    assert len(spy.calls) == 1


def test_the_example_workers_env_is_wrapped_through_the_hook(spy: WrapSpy, run_id: str) -> None:
    from mosaic_worker_example.config import ExampleConfig
    from mosaic_worker_example.runtime import make_env

    env = make_env(ExampleConfig(run_id=run_id, fastlane=True))
    try:
        assert env.decorated_by_spy is True
        assert [rid for rid, _ in spy.calls] == [run_id]
    finally:
        env.close()


def test_a_baked_workers_env_is_wrapped_through_the_hook(
    spy: WrapSpy, run_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cookiecutter-config.yaml"
    config.write_text(f'replay_dir: "{tmp_path / "replay"}"\n', encoding="utf-8")
    project = bake(tmp_path / "out", {"worker_name": "Hook Spy"}, config_file=config).project_dir
    monkeypatch.syspath_prepend(str(project))
    try:
        from mosaic_worker_hook_spy.config import Config  # type: ignore[import-not-found]
        from mosaic_worker_hook_spy.runtime import make_env  # type: ignore[import-not-found]

        env = make_env(Config(run_id=run_id, fastlane=True))
        try:
            assert env.decorated_by_spy is True
            assert [rid for rid, _ in spy.calls] == [run_id]
        finally:
            env.close()
    finally:
        for name in [m for m in sys.modules if m.startswith("mosaic_worker_hook_spy")]:
            del sys.modules[name]


def test_no_provider_is_a_clear_error(run_id: str) -> None:
    pm = create_plugin_manager()
    pm.unregister(name="builtin:mosaic_sdk.plugins.fastlane_provider")
    with pytest.raises(RuntimeError, match="no mosaic_fastlane_wrap_env provider answered"):
        wrap_env_through_hook(object(), run_id, {}, pm=pm)


def test_importing_the_libraries_stays_light() -> None:
    code = (
        "import sys, mosaic_sdk.telemetry, mosaic_sdk.fastlane; "
        "print(sorted(m for m in ('pluggy', 'mosaic_sdk.hookspecs', 'mosaic_sdk.plugins', "
        "'gymnasium') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cleanrl_shim_wraps_through_the_same_manager(spy: WrapSpy, run_id: str) -> None:
    pytest.importorskip("mosaic_worker_cleanrl")
    import gymnasium
    from mosaic_worker_cleanrl.run_setup import fastlane_hook

    settings = {"video_mode": "single", "slot": 0, "grid_limit": 4, "interval_ms": 0, "max_dim": 0}
    env = fastlane_hook()(gymnasium.make("CartPole-v1", render_mode="rgb_array"), run_id, settings)
    try:
        assert env.decorated_by_spy is True and spy.calls == [(run_id, settings)]
    finally:
        env.close()


def test_the_suites_fastlane_env_check_wraps_through_the_hook(spy: WrapSpy) -> None:
    from mosaic_sdk.conformance.checks.environments import check_env_fastlane
    from mosaic_sdk.conformance.subject import WorkerSubject

    with WorkerSubject("example") as subject:
        check_env_fastlane(subject)  # raises CheckFailed when the wrapped env misbehaves
    assert len(spy.calls) == 1 and spy.calls[0][0].startswith("conformance-example")
