"""The platform's ``Optional`` fields: ``None`` is accepted, kept as ``None`` (the SDK's one
spelling of "not given") and shown as such, from the platform's own frozen dataclasses through
discovery to ``mosaic workers list`` / ``show``."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.contract import WorkerCapabilities, WorkerMetadata
from mosaic_sdk.plugins import discover_workers

pytestmark = pytest.mark.usefixtures("plugin_fixtures")

PLUGINS = "plain=platform_shaped:with_none,valued=platform_shaped:with_values"


@pytest.fixture
def platform_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOSAIC_PLUGINS", PLUGINS)
    monkeypatch.setenv("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_platform_shaped_fixture_matches_the_platform() -> None:
    import platform_shaped

    caps = [f for f in dataclasses.fields(platform_shaped.PlatformCapabilities)]
    assert len(caps) == 14
    assert all(f.default is dataclasses.MISSING for f in caps)
    assert platform_shaped.PlatformCapabilities.__dataclass_params__.frozen  # type: ignore[attr-defined]
    with pytest.raises(TypeError):  # all 14 are required, as upstream
        platform_shaped.PlatformCapabilities(worker_type="x")  # type: ignore[call-arg]


@pytest.mark.usefixtures("platform_workers")
def test_none_in_every_optional_field_is_accepted_and_kept() -> None:
    registry = discover_workers()
    assert registry.errors == {}
    meta, caps = registry.get("plain").describe()
    assert meta.upstream_library is None and meta.upstream_version is None
    assert caps.gpu_memory_mb is None


@pytest.mark.usefixtures("platform_workers")
@pytest.mark.parametrize(("name", "factory"), [("plain", "with_none"), ("valued", "with_values")])
def test_every_platform_field_arrives_unchanged(name: str, factory: str) -> None:
    import platform_shaped

    given_meta, given_caps = getattr(platform_shaped, factory)()
    meta, caps = discover_workers().get(name).describe()
    assert {k: getattr(meta, k) for k in dataclasses.asdict(given_meta)} == dataclasses.asdict(
        given_meta
    )
    got = {k: getattr(caps, k) for k in dataclasses.asdict(given_caps)}
    assert got == dataclasses.asdict(given_caps)
    assert isinstance(caps.supported_paradigms, tuple)


@pytest.mark.parametrize("empty", [None, ""])
def test_no_upstream_library_has_one_spelling_none(empty: str | None) -> None:
    meta = WorkerMetadata(name="n", version="1", upstream_library=empty, upstream_version=empty)
    assert meta.upstream_library is None and meta.upstream_version is None
    assert WorkerMetadata(name="n", version="1").upstream_library is None


def test_round_trips_keep_none() -> None:
    meta = WorkerMetadata(name="n", version="1", upstream_library=None)
    caps = WorkerCapabilities(worker_type="w", gpu_memory_mb=None)
    for model in (meta, caps):
        data = json.loads(model.model_dump_json())
        assert type(model).model_validate(data) == model
    assert json.loads(meta.model_dump_json())["upstream_library"] is None
    assert json.loads(caps.model_dump_json())["gpu_memory_mb"] is None
    set_meta = WorkerMetadata(name="n", version="1", upstream_library="lib", upstream_version="2")
    assert WorkerMetadata.model_validate(set_meta.model_dump()) == set_meta


def test_a_value_of_the_wrong_type_is_still_refused() -> None:
    with pytest.raises(ValueError, match="upstream_library"):
        WorkerMetadata(name="n", version="1", upstream_library=3)  # type: ignore[arg-type]


@pytest.mark.usefixtures("platform_workers")
def test_workers_list_shows_them_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workers", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["plain"]["ok"] and rows["valued"]["ok"], rows
    assert main(["workers", "list"]) == 0
    out = capsys.readouterr().out
    assert "error" not in out and "plain" in out


@pytest.mark.usefixtures("platform_workers")
def test_workers_show_json_says_null(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workers", "show", "plain", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["metadata"]["upstream_library"] is None
    assert info["metadata"]["upstream_version"] is None
    assert info["capabilities"]["gpu_memory_mb"] is None
    assert main(["workers", "show", "valued", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["metadata"]["upstream_library"] == "mylib"
    assert info["capabilities"]["gpu_memory_mb"] == 2048


def _row(out: str, key: str) -> str:
    [line] = [ln for ln in out.splitlines() if f" {key} " in ln]
    return line.replace("│", " ").split(key, 1)[1].strip()


@pytest.mark.usefixtures("platform_workers")
def test_workers_show_text_says_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workers", "show", "plain"]) == 0
    out = capsys.readouterr().out
    assert _row(out, "upstream_library") == "none"
    assert _row(out, "upstream_version") == "none"
    assert _row(out, "gpu_memory_mb") == "none"
    assert main(["workers", "show", "valued"]) == 0
    out = capsys.readouterr().out
    assert _row(out, "upstream_library") == "mylib"
    assert _row(out, "gpu_memory_mb") == "2048"


def test_the_schema_of_an_upstream_config_accepts_its_own_to_dict() -> None:
    """Unknown keys are collected, and to_dict writes them back flat: the JSON Schema must
    accept them there (the guide's keys were refused as additional properties)."""
    import jsonschema

    from mosaic_sdk.plugins import UpstreamConfig

    config = UpstreamConfig.from_dict({"run_id": "r1", "algorithm": "ppo", "total_steps": 5})
    schema = UpstreamConfig.json_schema()
    jsonschema.validate(config.to_dict(), schema)
    with pytest.raises(jsonschema.ValidationError, match="run_id"):
        jsonschema.validate({"algorithm": "ppo"}, schema)  # run_id stays required
