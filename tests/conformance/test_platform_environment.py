"""The suite launches workers in the platform's environment, not ``mosaic run``'s.

``mosaic run`` sets ``PYTHONUNBUFFERED=1``; the platform's dispatcher copies its own
environment and sets no such variable (UPSTREAM.md). A worker that prints its lines without
flushing streams under ``mosaic run`` and delivers everything at exit on the platform: the
suite must see the second, at both levels, whatever the caller's own environment says.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mosaic_sdk.cli import conformance as cli_conformance
from mosaic_sdk.conformance import check_worker, get_check
from mosaic_sdk.conformance.recording import prepare_conformance_run
from mosaic_sdk.conformance.registry import PLATFORM, SDK
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.runner.supervision.launch import RUNNER_ONLY_ENV, prepare_run, resolve_job

UNFLUSHED = "upunflushed=fixture_upstream_unflushed:get_worker_metadata"


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mosaic")
    cli_conformance.register(parser.add_subparsers())
    args = parser.parse_args(["conformance", *argv])
    return int(args.handler(args))


def test_the_runner_only_variables_are_named_once() -> None:
    assert RUNNER_ONLY_ENV == {"PYTHONUNBUFFERED": "1"}


@pytest.mark.usefixtures("plugin_fixtures")
def test_mosaic_run_keeps_them_and_the_suite_drops_them_even_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # e.g. a CI runner's own environment
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8")
    handle = discover_workers().get("example")
    fastlane = {"GYM_GUI_FASTLANE_ONLY": "1", "MOSAIC_FASTLANE": "1"}

    def job(run_id: str):  # noqa: ANN202
        return resolve_job({"episodes": 1}, run_id=run_id)

    ours = prepare_run(handle, job("env-run"), runs_dir=tmp_path, extra_env=fastlane)
    assert ours.env["PYTHONUNBUFFERED"] == "1"
    suite = prepare_conformance_run(
        handle, job("env-suite"), runs_dir=tmp_path, extra_env={**fastlane, **RUNNER_ONLY_ENV}
    )
    assert "PYTHONUNBUFFERED" not in suite.env
    # what the platform sets or inherits too stays: FastLane variables, the caller's encoding
    assert suite.env["GYM_GUI_FASTLANE_ONLY"] == "1" and suite.env["MOSAIC_FASTLANE"] == "1"
    assert suite.env["PYTHONIOENCODING"] == "utf-8"
    # and the run's own variables, which tell the worker where its run lives
    assert suite.env["MOSAIC_RUN_ID"] == "env-suite"
    assert suite.env["MOSAIC_RUN_DIR"] == str(suite.run_dir)
    assert suite.env["MOSAIC_WORKER"] == "example"


@pytest.mark.parametrize("level", [PLATFORM, SDK])
def test_an_unflushed_guide_worker_fails_streams_live_at_both_levels(
    level: str, use_workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # the caller's environment cannot hide it
    use_workers(UNFLUSHED)
    [result] = check_worker(
        "upunflushed", on_fail=None, level=level, checks=["telemetry.streams_live"]
    )
    assert result.verdict == "failed", result.reason
    assert "held back" in result.reason
    assert result.hint == get_check("telemetry.streams_live").hint_for(level)
    assert "flush" in result.hint.lower() and "line-buffered" in result.hint


def test_mosaic_conformance_fails_it_with_a_flush_hint(use_workers, capsys) -> None:
    use_workers(UNFLUSHED)
    assert run_cli("upunflushed", "-k", "streams_live", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["level"] == PLATFORM and doc["ok"] is False
    [result] = [r for r in doc["results"] if r["name"] == "telemetry.streams_live"]
    assert result["verdict"] == "failed"
    hint = result["hint"]
    assert "flush=True" in hint and "line_buffering=True" in hint
    assert "PYTHONUNBUFFERED" in hint


def test_the_same_worker_streams_under_mosaic_runs_environment(
    use_workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The difference is the launch environment alone: under ``mosaic run``'s (which still
    sets the variable) the unflushed worker's first line arrives while it is running."""
    import subprocess

    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    use_workers(UNFLUSHED)
    handle = discover_workers().get("upunflushed")
    prepared = prepare_run(
        handle, resolve_job({"episodes": 3, "steps": 10}, run_id="unflushed-run"), runs_dir=tmp_path
    )
    assert prepared.env["PYTHONUNBUFFERED"] == "1"
    proc = subprocess.Popen(
        prepared.argv,
        env=prepared.env,
        stdin=subprocess.DEVNULL,  # not pytest's: an open pipe under -s is never at EOF
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        still_running = proc.poll() is None
        rest = proc.stdout.read()
    finally:
        proc.wait(timeout=60)
    assert json.loads(first)["event"] == "run_started"
    assert still_running and rest.count(b"\n") > 30  # the other lines came after it
