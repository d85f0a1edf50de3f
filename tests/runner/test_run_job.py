"""The job of a run (config and run id) is decided once, in launch preparation; only the store
modules speak SQL."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import mosaic_sdk
from mosaic_sdk.cli import main
from mosaic_sdk.contract import ConfigError
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.runner.supervision.launch import ResolvedJob, resolve_job
from mosaic_sdk.runner.supervisor import run_worker

DESCRIPTOR = {"run_id": "plat-1", "metadata": {"worker": {"config": {"lines": 1}}}}


def test_a_descriptor_run_id_that_disagrees_with_run_id_is_one_clear_error(
    fixture_workers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, --run-id silently replaced the platform's run id; now nothing starts and one
    line names both ids."""
    config = tmp_path / "job.json"
    config.write_text(json.dumps(DESCRIPTOR))
    store = tmp_path / "store.sqlite"
    code = main(
        ["run", "fixture", "--config", str(config), "--run-id", "mine", "--store", str(store)]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2
    assert len(lines) == 1, err
    assert "'plat-1'" in lines[0] and "'mine'" in lines[0]
    # run directories live beside the store, under its stem (issue 30, item 12: this looked
    # under tmp_path/runs, where none is ever made)
    assert runs_dir_for(store) == tmp_path / "store"
    assert not runs_dir_for(store).exists()
    assert not store.exists()


def test_the_library_refuses_the_same_disagreement_before_touching_the_store(
    fixture_workers: Path, store_path: Path
) -> None:
    with pytest.raises(ConfigError, match="'plat-1'.*'other'"):
        run_worker("fixture", DESCRIPTOR, run_id="other", store=store_path)
    assert runs_dir_for(store_path) == store_path.parent / store_path.stem
    assert not runs_dir_for(store_path).exists()
    assert not store_path.exists()  # not even created


def test_a_descriptor_run_id_is_used_when_no_other_is_given(
    fixture_workers: Path, store_path: Path
) -> None:
    result = run_worker("fixture", DESCRIPTOR, store=store_path)
    assert result.run_id == "plat-1"
    written = json.loads((result.run_dir / "config.json").read_text())
    assert (written["run_id"], written["lines"]) == ("plat-1", 1)


def test_resolve_job_unwraps_once_and_checks_the_id() -> None:
    job = resolve_job(DESCRIPTOR)
    assert job == ResolvedJob({"lines": 1, "run_id": "plat-1"}, "plat-1")
    assert resolve_job(job, run_id="plat-1") == job
    assert job.with_run_id("suite-2").config == {"lines": 1, "run_id": "suite-2"}
    with pytest.raises(ConfigError, match="run_id"):
        resolve_job({"lines": 1}, run_id="../x")
    assert resolve_job({"lines": 1}).run_id  # a fresh id


def test_cli_refuses_set_run_id(fixture_workers: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store.sqlite"
    code = main(["run", "fixture", "--set", "run_id=x1", "--run-id", "x2", "--store", str(store)])
    assert code == 2
    assert "--run-id" in capsys.readouterr().err


SQL_MODULES = {f"runner/storage/{m}.py" for m in ("store", "schema", "writer", "rows", "summary")}
#: Store modules outside the runner: the sweeps tables (mosaic_sdk.sweeps.store).
OTHER_SQL_MODULES = {"sweeps/store.py"}


def test_only_the_store_modules_run_sql() -> None:
    """Everything else asks RunStore (no execute() on a connection outside the store)."""
    root = Path(mosaic_sdk.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in SQL_MODULES:
            continue
        if path.relative_to(root).as_posix() in OTHER_SQL_MODULES:
            continue
        if "scaffold/template" in path.as_posix():  # the template: not Python until baked
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("execute", "executemany", "executescript")
            ) or (isinstance(node, ast.Attribute) and node.attr == "conn"):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []
