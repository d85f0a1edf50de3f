"""A conformance config without the SDK: ``[tool.mosaic.conformance]`` in the worker's
pyproject.toml (found through direct_url.json), or a ``mosaic.conformance`` entry point.

Workers are "installed" by writing a ``.dist-info`` directory onto ``sys.path`` (and
``PYTHONPATH``), as pip does, without running pip.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import textwrap
from pathlib import Path

import pytest

from mosaic_sdk.cli import UsageError
from mosaic_sdk.cli import conformance as cli_conformance
from mosaic_sdk.conformance import check_worker
from mosaic_sdk.conformance.config_source import (
    ConformanceConfig,
    ConformanceConfigError,
    check_against_model,
    file_config,
    read_pyproject,
)
from mosaic_sdk.conformance.subject import WorkerSubject
from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.plugins import UpstreamConfig

pytest_plugins = ["pytester"]

WORKER = "fixture_upstream_ok:get_worker_metadata"


def install(
    site: Path,
    dist: str,
    entry_points: dict[str, dict[str, str]],
    source: Path | None = None,
) -> None:
    """Write the metadata pip would write for ``dist`` (editable from ``source`` if given)."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    sections = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in names.items())
        for group, names in entry_points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(sections))
    if source is not None:
        direct = {"url": source.as_uri(), "dir_info": {"editable": True}}
        (info / "direct_url.json").write_text(json.dumps(direct))
    importlib.invalidate_caches()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_workers) -> Path:
    """A site directory on sys.path and PYTHONPATH; no MOSAIC_PLUGINS workers."""
    use_workers("")
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ["PYTHONPATH"]]))
    monkeypatch.setenv("MOSAIC_CONFORMANCE_SKIP_PACKAGING", "1")
    return root


def project(tmp_path: Path, table: str) -> Path:
    source = tmp_path / "src"
    source.mkdir(parents=True, exist_ok=True)
    (source / "pyproject.toml").write_text(
        '[project]\nname = "upok"\nversion = "1.0"\n\n' + textwrap.dedent(table)
    )
    return source


# --- reading the table --------------------------------------------------------------------


def test_the_table_is_read_and_a_pyproject_without_it_gives_none(tmp_path: Path) -> None:
    source = project(tmp_path, "[tool.mosaic.conformance]\nepisodes = 1\nsteps = 5\n")
    assert read_pyproject(source / "pyproject.toml") == {"episodes": 1, "steps": 5}
    other = project(tmp_path / "b", "[tool.ruff]\nline-length = 100\n")
    assert read_pyproject(other / "pyproject.toml") is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[tool.mosaic.conformance\nepisodes = 1\n", "malformed TOML: "),
        ("[tool.mosaic]\nconformance = 3\n", "expected a table of config keys, got int"),
        ("[tool.mosaic.conformance]\nrun_id = 'x'\n", "key 'run_id': the suite sets the run id"),
        ("[tool.mosaic.conformance]\nstart = 1979-05-27\n", "key 'start': a date is not a JSON"),
        ("[tool.mosaic.conformance]\nlr = nan\n", "key 'lr': nan is not a JSON number"),
        ("[tool.mosaic.conformance]\nsizes = [1, 07:32:00]\n", "key 'sizes[1]': a time"),
    ],
)
def test_bad_content_names_the_file_and_the_key(tmp_path: Path, table: str, message: str) -> None:
    path = project(tmp_path, table) / "pyproject.toml"
    with pytest.raises(ConformanceConfigError) as info:
        read_pyproject(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_the_worker_config_model_judges_keys_and_types(tmp_path: Path) -> None:
    class FixtureConfig(WorkerConfig):  # a strict SDK model (extra="forbid")
        episodes: int = 1

    origin = f"{tmp_path / 'pyproject.toml'} [tool.mosaic.conformance]"
    with pytest.raises(ConformanceConfigError, match=r"(?s)pyproject.toml.*unknown key 'epochs'"):
        check_against_model(ConformanceConfig({"epochs": 3}, origin), FixtureConfig, "r1")
    with pytest.raises(ConformanceConfigError, match=r"(?s)pyproject.toml.*'seed'"):
        check_against_model(ConformanceConfig({"seed": "x"}, origin), UpstreamConfig, "r1")
    check_against_model(ConformanceConfig({"episodes": 2}, origin), UpstreamConfig, "r1")


# --- finding it: source tree, entry point, both -------------------------------------------


def test_no_distribution_means_no_file_config() -> None:
    assert file_config("MOSAIC_PLUGINS", "upok") is None
    assert file_config(None, "upok") is None
    assert file_config("no-such-distribution", "upok") is None


def test_the_entry_point_works_without_a_source_tree(site: Path) -> None:
    (site / "upok_settings.py").write_text(
        "CONFIG = {'episodes': 1, 'steps': 12}\n\ndef make():\n    return {'steps': 4}\n"
    )
    group = {"mosaic.workers": {"upok": WORKER}}
    install(site, "wheel-a", {**group, "mosaic.conformance": {"upok": "upok_settings:CONFIG"}})
    found = file_config("wheel-a", "upok")
    assert found is not None and found.data == {"episodes": 1, "steps": 12}
    assert found.origin.startswith("entry point mosaic.conformance:upok")
    install(site, "wheel-b", {**group, "mosaic.conformance": {"upok": "upok_settings:make"}})
    assert file_config("wheel-b", "upok") == ConformanceConfig(
        {"steps": 4}, found.origin.replace("CONFIG", "make").replace("wheel-a", "wheel-b")
    )
    install(site, "wheel-c", {**group, "mosaic.conformance": {"upok": "upok_settings:NOPE"}})
    with pytest.raises(ConformanceConfigError, match="loading it failed: AttributeError"):
        file_config("wheel-c", "upok")


def test_table_and_entry_point_must_agree(site: Path, tmp_path: Path) -> None:
    (site / "upok_settings.py").write_text("CONFIG = {'episodes': 1, 'steps': 12}\n")
    source = project(tmp_path, "[tool.mosaic.conformance]\nepisodes = 1\nsteps = 30\n")
    entry_points = {
        "mosaic.workers": {"upok": WORKER},
        "mosaic.conformance": {"upok": "upok_settings:CONFIG"},
    }
    install(site, "both", entry_points, source)
    with pytest.raises(ConformanceConfigError, match="differs from the entry point .* 'steps'"):
        file_config("both", "upok")


def test_a_guide_worker_installed_from_source_runs_with_its_pyproject_table(
    site: Path, tmp_path: Path
) -> None:
    source = project(
        tmp_path, "[tool.mosaic.conformance]\nepisodes = 1\nsteps = 25\nstep_delay_ms = 40.0\n"
    )
    install(site, "upok-worker", {"mosaic.workers": {"upok": WORKER}}, source)
    with WorkerSubject("upok") as subject:
        assert subject.handle is not None and subject.handle.distribution == "upok-worker"
        assert subject.conformance_source().origin.startswith(str(source / "pyproject.toml"))
    results = {r.name: r for r in check_worker("upok", on_fail="raise", keyword="telemetry")}
    assert results["telemetry.counts_add_up"].reason == "25 steps in 1 episodes"


def test_a_malformed_table_is_a_usage_error_at_every_front_door(
    site: Path, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    source = project(tmp_path, "[tool.mosaic.conformance]\nrun_id = 'mine'\nsteps = 3\n")
    install(site, "upok-worker", {"mosaic.workers": {"upok": WORKER}}, source)
    with pytest.raises(ConformanceConfigError, match="key 'run_id'"):
        check_worker("upok", keyword="config_runs")
    parser = argparse.ArgumentParser(prog="mosaic")
    cli_conformance.register(parser.add_subparsers())
    args = parser.parse_args(["conformance", "upok"])
    with pytest.raises(UsageError, match=r"(?s)pyproject.toml \[tool.mosaic.conformance\].*run_id"):
        args.handler(args)
    result = pytester.runpytest_subprocess(
        "--pyargs", "mosaic_sdk.conformance", "--mosaic-worker", "upok", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad conformance config in *pyproject.toml*", "*run_id*"])
