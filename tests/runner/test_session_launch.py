"""start_session / ``mosaic play`` load a worker the way ``mosaic run`` does (resolve_worker:
the worker protocol check included), and switch FastLane on through the one writer of
FastLane's variables (apply_fastlane_environment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.runner.supervision.resolve import WorkerProtocolError
from mosaic_sdk.runner.supervision.session_launch import fastlane_environment, start_session
from mosaic_sdk.shm.segment import shm_unlink

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def future_worker(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(FIXTURES))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES) + (os.pathsep + old if old else ""))
    monkeypatch.setenv("MOSAIC_PLUGINS", "control_future=control_worker:Future")
    monkeypatch.setenv("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "1")
    return "control_future"


def mosaic(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *argv],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_start_session_refuses_another_worker_protocol(future_worker: str, tmp_path: Path) -> None:
    with pytest.raises(WorkerProtocolError, match="speaks worker protocol 99"):
        start_session(future_worker, runs_dir=tmp_path)
    assert not any(tmp_path.iterdir())  # refused before a run directory was made


def test_play_refuses_it_with_the_error_of_run(future_worker: str, tmp_path: Path) -> None:
    store = str(tmp_path / "s.sqlite")
    run = mosaic("run", future_worker, "--store", store, "--no-preflight")
    play = mosaic("play", future_worker, "--runs-dir", str(tmp_path / "runs"))
    assert run.returncode == play.returncode == 2, (run.stderr, play.stderr)
    assert "speaks worker protocol 99" in run.stderr
    assert play.stderr == run.stderr and play.stdout == ""


def test_fastlane_variables_come_from_the_one_writer() -> None:
    env = fastlane_environment({"PATH": "/bin", "GYM_GUI_FASTLANE_SLOT": "2"})
    assert env["PATH"] == "/bin"
    for prefix in ("MOSAIC_FASTLANE_", "GYM_GUI_FASTLANE_"):  # both spellings, every variable
        assert env[prefix + "SLOT"] == "2"  # the caller's setting is kept
        assert env[prefix + "ONLY"] == "0"
        assert env[prefix + "VIDEO_MODE"] == "single"
        assert env[prefix + "GRID_LIMIT"] == "4"
    assert env["MOSAIC_FASTLANE"] == "1"
    only = fastlane_environment({"MOSAIC_FASTLANE_ONLY": "1", "MOSAIC_FASTLANE_VIDEO_MODE": "grid"})
    assert only["GYM_GUI_FASTLANE_ONLY"] == "1" and only["GYM_GUI_FASTLANE_VIDEO_MODE"] == "grid"


def test_a_session_worker_gets_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOSAIC_FASTLANE_GRID_LIMIT", "3")
    session = start_session("example", {"env_id": "CartPole-v1"}, runs_dir=tmp_path)
    try:
        assert session.pid is not None
        with open(f"/proc/{session.pid}/environ", "rb") as fh:
            seen = dict(
                item.decode().split("=", 1) for item in fh.read().split(b"\0") if b"=" in item
            )
    finally:
        session.kill()
        shm_unlink(segment_name(session.run_id))
    assert seen["MOSAIC_FASTLANE"] == "1"
    assert seen["GYM_GUI_FASTLANE_GRID_LIMIT"] == seen["MOSAIC_FASTLANE_GRID_LIMIT"] == "3"
    assert seen["GYM_GUI_FASTLANE_SLOT"] == "0" and seen["GYM_GUI_FASTLANE_ONLY"] == "0"
