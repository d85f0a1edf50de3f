"""The worker package of the platform's guide (tests/plugin_fixtures/guide_package), installed
with pip and no gym_gui: it is listed ok, and `mosaic run` stores every line it writes, also
when the worker is SIGKILLed mid-run and when the run is cancelled (SIGTERM)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from guide_install import (  # noqa: F401 - fixtures
    guide_site,
    installed,
    mosaic,
    rows,
    run_interrupted,
)


def stored_lines(store: Path, run_id: str) -> dict[int, tuple[str, Any]]:
    """Every stored stdout line by line number: (kind, step_index or event name)."""
    found: dict[int, tuple[str, Any]] = {}
    for line_no, step in rows(
        store, "SELECT line_no, step_index FROM steps WHERE run_id = ?", run_id
    ):
        found[line_no] = ("step", step)
    for line_no, event in rows(
        store, "SELECT line_no, event FROM events WHERE run_id = ? AND NOT synthesised", run_id
    ):
        found[line_no] = ("event", event)
    for line_no, kind in rows(
        store,
        "SELECT line_no, kind FROM log_lines WHERE run_id = ? AND stream = 'stdout'",
        run_id,
    ):
        found[line_no] = (kind, None)
    return found


def assert_every_line_stored(store: Path, run_id: str) -> list[tuple[str, Any]]:
    """The lines are numbered 1..N with no gap, run_started first, a step line every 100
    steps (0, 100, 200, ...) with none missing, and nothing stored as a log line."""
    found = stored_lines(store, run_id)
    assert sorted(found) == list(range(1, len(found) + 1)), sorted(found)
    lines = [found[n] for n in sorted(found)]
    assert lines[0] == ("event", "run_started")
    steps = [value for kind, value in lines if kind == "step"]
    assert steps == [100 * i for i in range(len(steps))]
    assert {kind for kind, _ in lines} <= {"event", "step"}
    return lines


# --- listing ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("installed")
def test_the_guide_package_lists_ok_without_gym_gui() -> None:
    done = mosaic("workers", "list", "--json")
    assert done.returncode == 0, done.stderr
    [row] = [r for r in json.loads(done.stdout) if r["name"] == "myworker"]
    assert row["ok"], row
    assert row["distribution"] == "my-worker" and row["style"] == "upstream"
    done = mosaic("workers", "list")
    [line] = [ln for ln in done.stdout.splitlines() if "myworker" in ln]
    assert "ok" in line and "error" not in line
    done = mosaic("workers", "show", "myworker", "--json")
    info = json.loads(done.stdout)
    assert info["metadata"]["upstream_library"] == "mylib"
    assert info["capabilities"]["supports_checkpointing"] is True
    assert info["capabilities"]["gpu_memory_mb"] is None  # not passed by the guide


# --- running ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("installed")
def test_the_guide_package_runs_under_mosaic_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"algorithm": "ppo", "total_steps": 450}))
    done = mosaic(
        "run", "myworker", "--config", str(config), "--run-id", "guide-ok", "--store", str(store)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert rows(store, "SELECT status, exit_code FROM runs") == [("completed", 0)]
    lines = assert_every_line_stored(store, "guide-ok")
    assert lines == [
        ("event", "run_started"),
        ("step", 0),
        ("event", "heartbeat"),  # the guide's "every 60 s" beat comes at step 0 only
        *[("step", 100 * i) for i in range(1, 5)],
        ("event", "run_completed"),
    ]
    [(payload,)] = rows(store, "SELECT payload_json FROM events WHERE event = 'run_started'")
    assert json.loads(payload) == {"env_id": "CartPole-v1", "algorithm": "ppo"}


@pytest.mark.usefixtures("installed")
def test_a_sigkilled_guide_worker_loses_no_line(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    result = run_interrupted(store, "guide-kill", 3, lambda _, pid: os.kill(pid, signal.SIGKILL))
    assert result.status == "failed" and result.exit_code == -9
    assert result.synthesised == ["run_failed"]
    lines = assert_every_line_stored(store, "guide-kill")
    assert sum(kind == "step" for kind, _ in lines) >= 3
    assert ("event", "run_completed") not in lines


@pytest.mark.usefixtures("installed")
def test_a_cancelled_guide_worker_loses_no_line(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    result = run_interrupted(store, "guide-cancel", 3, lambda sup, _: sup.cancel("test"))
    assert result.status == "cancelled"
    # the guide installs no SIGTERM handler: the worker dies of it, without a terminal event,
    # and the runner records the cancellation for it
    assert result.exit_code == -signal.SIGTERM
    assert result.synthesised == ["run_cancelled"]
    lines = assert_every_line_stored(store, "guide-cancel")
    assert sum(kind == "step" for kind, _ in lines) >= 3
