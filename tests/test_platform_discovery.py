"""The MOSAIC platform discovers workers built with the SDK.

The platform's discovery, as its code does it (UPSTREAM.md, "Worker contract and discovery"):
for each ``mosaic.workers`` entry point, ``factory = ep.load(); result = factory()``; the result
must be a 2-tuple whose items are instances of *its own* ``gym_gui.core.worker.WorkerMetadata``
and ``WorkerCapabilities`` (frozen dataclasses, every field required); anything else is
skipped. ``platform_shaped.platform_discover`` (tests/plugin_fixtures) does the same against
a platform-shaped ``gym_gui.core.worker`` written by the test (the dataclasses of
``platform_shaped``), put on ``sys.path`` as a real package would be.

A module entry point (what every SDK worker declared before ``platform_factory``) fails here:
``'module' object is not callable``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from mosaic_sdk.contract import WorkerCapabilities, WorkerMetadata
from mosaic_sdk.plugins import discover_workers, platform_factory
from mosaic_sdk.plugins.gym_gui_stand_in import (
    GymGuiStandInFinder,
    install_gym_gui_stand_in,
    is_stand_in,
    uninstall_gym_gui_stand_in,
)
from mosaic_sdk.plugins.platform_entry import PlatformFactory

pytestmark = pytest.mark.usefixtures("plugin_fixtures")


def _forget_gym_gui() -> None:
    for name in [n for n in sys.modules if n == "gym_gui" or n.startswith("gym_gui.")]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def no_gym_gui_left_behind() -> Iterator[None]:
    uninstall_gym_gui_stand_in()
    _forget_gym_gui()
    yield
    uninstall_gym_gui_stand_in()
    _forget_gym_gui()


@pytest.fixture
def no_gui() -> None:
    if importlib.util.find_spec("gym_gui") is not None:
        pytest.skip("a real gym_gui is installed in this environment")


@pytest.fixture
def platform_gui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A platform-shaped ``gym_gui.core.worker`` importable from ``sys.path``."""
    import platform_shaped

    monkeypatch.syspath_prepend(str(platform_shaped.write_gym_gui(tmp_path / "gui")))
    return platform_shaped


def platform_discover(entry_points: list[metadata.EntryPoint]) -> tuple[dict, dict]:
    import platform_shaped

    return platform_shaped.platform_discover(entry_points)


def installed(name: str) -> metadata.EntryPoint:
    (ep,) = [ep for ep in metadata.entry_points(group="mosaic.workers") if ep.name == name]
    return ep


def test_the_example_worker_is_discovered_by_the_platform(platform_gui: Any) -> None:
    ep = installed("example")
    found, skipped = platform_discover([ep])
    assert skipped == {}
    meta, caps = found["example"]
    assert type(meta) is platform_gui.PlatformMetadata
    assert type(caps) is platform_gui.PlatformCapabilities
    assert meta.name == "Example Worker" and meta.upstream_version is None
    assert caps.worker_type == "example" and caps.gpu_memory_mb is None
    assert caps.env_families == ("gymnasium", "classic_control")
    assert caps.supports_pause_resume is True and caps.estimated_memory_mb == 128


def test_a_module_entry_point_is_what_the_platform_skips(platform_gui: Any) -> None:
    """The form every SDK worker used before: the platform cannot call a module."""
    old = metadata.EntryPoint("example", "mosaic_worker_example.plugin", "mosaic.workers")
    found, skipped = platform_discover([old])
    assert found == {}
    assert "'module' object is not callable" in skipped["example"]


def test_the_sdk_models_alone_are_skipped_too(platform_gui: Any) -> None:
    """Same fields are not enough: the platform checks its own classes."""
    plain = metadata.EntryPoint(
        "example", "mosaic_worker_example.plugin:describe", "mosaic.workers"
    )
    _, skipped = platform_discover([plain])
    assert "invalid metadata type" in skipped["example"]


def test_every_platform_field_is_copied_and_no_sdk_only_field(platform_gui: Any) -> None:
    from mosaic_worker_example.plugin import describe, get_worker_metadata

    sdk_meta, sdk_caps = describe()
    meta, caps = get_worker_metadata()
    for obj, model in ((meta, sdk_meta), (caps, sdk_caps)):
        for f in dataclasses.fields(obj):
            assert getattr(obj, f.name) == getattr(model, f.name), f.name
    assert not hasattr(caps, "supports_fastlane") and not hasattr(caps, "control_protocol")
    assert all(
        isinstance(getattr(caps, n), tuple)
        for n in ("supported_paradigms", "env_families", "action_spaces", "observation_spaces")
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.max_agents = 3  # type: ignore[misc]


def test_a_real_gym_gui_wins_over_an_installed_stand_in(platform_gui: Any) -> None:
    install_gym_gui_stand_in()
    from mosaic_worker_example.plugin import get_worker_metadata

    meta, caps = get_worker_metadata()
    assert type(meta) is platform_gui.PlatformMetadata
    assert type(caps) is platform_gui.PlatformCapabilities
    assert not is_stand_in(sys.modules["gym_gui.core.worker"])


@pytest.mark.usefixtures("no_gui")
def test_with_the_stand_in_answering_its_classes_are_returned() -> None:
    install_gym_gui_stand_in()
    from mosaic_worker_example.plugin import get_worker_metadata

    meta, caps = get_worker_metadata()
    stand_in = sys.modules["gym_gui.core.worker"]
    assert is_stand_in(stand_in)
    assert type(meta) is stand_in.WorkerMetadata
    assert type(caps) is stand_in.WorkerCapabilities
    assert caps.worker_type == "example" and caps.supports_checkpointing is True
    found, skipped = platform_discover([installed("example")])
    assert skipped == {} and "example" in found


@pytest.mark.usefixtures("no_gui")
def test_without_any_gym_gui_the_sdk_models_are_returned_and_none_is_installed() -> None:
    from mosaic_worker_example.plugin import get_worker_metadata

    meta, caps = get_worker_metadata()
    assert type(meta) is WorkerMetadata and type(caps) is WorkerCapabilities
    assert caps.supports_fastlane is True  # the SDK's own model keeps its own fields
    assert not any(isinstance(f, GymGuiStandInFinder) for f in sys.meta_path)
    assert "gym_gui" not in sys.modules


def test_a_gym_gui_that_fails_to_import_is_not_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "broken"
    (root / "gym_gui" / "core" / "worker").mkdir(parents=True)
    (root / "gym_gui" / "__init__.py").write_text("")
    (root / "gym_gui" / "core" / "__init__.py").write_text("")
    (root / "gym_gui" / "core" / "worker" / "__init__.py").write_text("import a_missing_dep\n")
    monkeypatch.syspath_prepend(str(root))
    from mosaic_worker_example.plugin import get_worker_metadata

    with pytest.raises(ModuleNotFoundError, match="a_missing_dep"):
        get_worker_metadata()


def test_sdk_discovery_registers_the_module_the_factory_carries() -> None:
    import mosaic_worker_example.plugin as plugin
    from mosaic_worker_example.config import ExampleConfig

    handle = discover_workers(environ={}).get("example")
    assert handle.style == "plugin"
    assert handle.plugin is plugin  # its hooks, not the upstream adapter
    assert handle.entry_point == "mosaic_worker_example.plugin:get_worker_metadata"
    assert handle.config_model() is ExampleConfig
    assert handle.capabilities.supports_fastlane is True


def test_module_entry_points_of_published_workers_load_as_before() -> None:
    registry = discover_workers(
        environ={
            "MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1",
            "MOSAIC_PLUGINS": "good=fixture_good_module,legacy=fixture_workers:upstream_factory",
        }
    )
    good = registry.get("good")
    assert good.style == "plugin" and good.plugin is sys.modules["fixture_good_module"]
    assert registry.get("legacy").style == "upstream"  # plain factories are still adapted


def test_any_object_carrying_its_plugin_is_registered_as_that_plugin() -> None:
    """The rule is the attribute, not the class: a hand-written factory may carry it too."""
    import fixture_good_module

    def factory() -> None:
        raise AssertionError("the SDK never calls it")

    factory.__mosaic_plugin__ = fixture_good_module  # type: ignore[attr-defined]
    handle = discover_workers(
        environ={"MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1"}, extra={"good": factory}
    ).get("good")
    assert handle.plugin is fixture_good_module and handle.style == "plugin"


def test_a_carried_plugin_that_is_no_plugin_is_an_error() -> None:
    def factory() -> None: ...

    factory.__mosaic_plugin__ = 42  # type: ignore[attr-defined]
    registry = discover_workers(
        environ={"MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1"}, extra={"odd": factory}
    )
    assert "is not a module, class or object with @mosaic_sdk.hookimpl" in (
        registry.errors["odd"].message
    )


def test_misuse_is_explained() -> None:
    with pytest.raises(TypeError, match=r"platform_factory\(__name__\)"):
        platform_factory(sys.modules[__name__])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="has no mosaic_worker_describe hook"):
        platform_factory("json")()
    factory = platform_factory("mosaic_worker_example.plugin")
    assert isinstance(factory, PlatformFactory)
    assert repr(factory) == "platform_factory('mosaic_worker_example.plugin')"


def test_the_factory_is_made_without_importing_a_heavy_library() -> None:
    """Discovery cost: making the factory (at the plugin module's import) loads neither
    pluggy nor pydantic nor numpy (the figures: benchmarks/plugins/discovery_cost.py)."""
    code = (
        "import sys\n"
        "from mosaic_sdk.plugins import platform_factory\n"
        "platform_factory('some.plugin')\n"
        "print(sorted(m for m in ('pluggy', 'pydantic', 'numpy') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


# --- a worker baked by `mosaic new` ----------------------------------------------------------


@pytest.fixture(scope="module")
def baked_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mosaic_sdk.scaffold import bake

    root = tmp_path_factory.mktemp("platform-bake")
    config = root / "cookiecutter-config.yaml"
    config.write_text(f'replay_dir: "{root / "replay"}"\n', encoding="utf-8")
    answers = {"worker_name": "Platform Check"}
    return bake(root / "out", answers, config_file=config).project_dir


def test_a_baked_worker_is_discovered_by_the_platform(
    baked_project: Path, platform_gui: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its pyproject's entry point, loaded as the platform loads it (the installed case runs
    in a fresh environment in tests/scaffold/test_end_to_end.py)."""
    table = tomllib.loads((baked_project / "pyproject.toml").read_text(encoding="utf-8"))
    [(name, value)] = table["project"]["entry-points"]["mosaic.workers"].items()
    monkeypatch.syspath_prepend(str(baked_project))
    found, skipped = platform_discover([metadata.EntryPoint(name, value, "mosaic.workers")])
    assert skipped == {}
    meta, caps = found[name]
    assert meta.name == "Platform Check"
    assert type(caps) is platform_gui.PlatformCapabilities and caps.worker_type == name


def test_the_publishing_guide_shows_the_entry_point_mosaic_new_writes(
    baked_project: Path,
) -> None:
    from docs_snippets.blocks import blocks

    [shown] = [
        b
        for b in blocks("docs/guides/publishing.md")
        if b.kind == "tested-by" and "test_platform_discovery" in b.reason
    ]
    [(_, value)] = tomllib.loads(shown.code)["project"]["entry-points"]["mosaic.workers"].items()
    table = tomllib.loads((baked_project / "pyproject.toml").read_text(encoding="utf-8"))
    [(_, baked)] = table["project"]["entry-points"]["mosaic.workers"].items()
    assert value.partition(".")[2] == baked.partition(".")[2] == "plugin:get_worker_metadata"
