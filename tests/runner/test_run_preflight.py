"""`mosaic run` runs the worker's own --dry-run first: a config it refuses stores nothing."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from tests.conftest import returns


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_refuses_a_config_its_dry_run_refuses_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    store_args = ("--store", str(store), "--runs-dir", str(tmp_path / "runs"))
    code, out, err = run_cli(capsys, "run", "example", "--set", "env_id=NoSuchEnv-v0", *store_args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("mosaic: error: worker 'example' refuses this config: its dry run")
    assert "env_id 'NoSuchEnv-v0' is not a registered gymnasium env" in lines[0]
    assert "--no-preflight" in lines[0]
    assert not out
    assert not store.exists() and not (tmp_path / "runs").exists()
    guide = (Path(__file__).parents[2] / "docs" / "guides" / "running.md").read_text()
    assert lines[0] in guide.splitlines()  # the guide quotes it as it is

    # the opt-out: the worker starts, fails on its own, and the failed run is stored
    code, out, err = run_cli(
        capsys, "run", "example", "--set", "env_id=NoSuchEnv-v0", "--no-preflight", *store_args
    )
    assert code == 1, err
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("failed",)]


def test_the_dry_run_leaves_no_scratch_behind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    store = tmp_path / "runs.sqlite"
    code, _, err = run_cli(capsys, "run", "example", "--set", "episodes=1", "--store", str(store))
    assert code == 0, err
    run_cli(capsys, "run", "example", "--set", "env_id=NoSuchEnv-v0", "--store", str(store))
    assert list(scratch.iterdir()) == []


def test_a_worker_that_ignores_dry_run_is_stopped_whole(
    fixture_workers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOSAIC_PLUGINS", "deaf=runner_workers:Deaf")
    from mosaic_sdk.runner.supervision.preflight import preflight
    from mosaic_sdk.runner.supervisor import resolve_worker

    marker = f"deaf-{os.getpid()}-{time.time_ns()}"
    handle = resolve_worker("deaf")
    said = returns(lambda: preflight(handle, {"mode": marker}, timeout=1.0))  # a hang guard
    assert not said.ok and said.exit_code is None
    assert said.problem == "its dry run did not end within 1s (does the worker handle --dry-run?)"
    # the sleeping grandchild went with its parent: no process of ours sleeps on
    assert processes_with(marker) == []


def processes_with(marker: str) -> list[str]:
    mine = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and pid != str(os.getpid()):
            mine.append(pid)
    return mine


def test_a_dry_run_leaves_no_setsid_descendant_behind(
    fixture_workers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dry run goes through the run lifecycle, which reaps processes that left the
    worker's group with setsid(); a Popen + killpg of the group alone missed them."""
    monkeypatch.setenv("MOSAIC_PLUGINS", "escaper=runner_workers:Escaper")
    from mosaic_sdk.runner.supervision.preflight import preflight
    from mosaic_sdk.runner.supervisor import resolve_worker

    marker = f"escaper-{os.getpid()}-{time.time_ns()}"
    said = preflight(resolve_worker("escaper"), {"mode": marker}, timeout=30.0)
    assert said.ok, said
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []


def test_the_dry_run_checks_what_the_worker_would_be_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A valid config passes, with the same --set overrides the run gets."""
    store = tmp_path / "runs.sqlite"
    code, out, err = run_cli(
        capsys,
        "run",
        "example",
        "--set",
        "env_id=Acrobot-v1",
        "--set",
        "episodes=1",
        "--store",
        str(store),
        "--json",
    )
    assert code == 0, err
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("completed",)]
