"""`mosaic run` and `mosaic runs` through the real CLI, bad input as a new user would type it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mosaic_sdk.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("mosaic: error: ")
    return lines[0]


def test_run_example_with_no_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", "example", "--set", "episodes=2")
    assert code == 0, err
    summary = out.strip().splitlines()[-1]
    assert " completed: " in summary
    assert "inspect: mosaic runs show " in summary
    run_id = summary.split()[1]
    home = Path(os.environ["MOSAIC_HOME"])
    assert (home / "runs.sqlite").exists()
    assert (home / "runs" / run_id / "config.json").exists()

    code, out, _ = run_cli(capsys, "runs", "show", run_id, "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["run_id"] == run_id
    assert shown["worker"] == "example"
    assert shown["status"] == "completed"
    assert shown["exit_code"] == 0
    assert shown["counts"]["episodes"] == 2
    # the example claims checkpointing: it saves one at the end of every run
    assert shown["counts"]["events"] == 3
    assert shown["counts"]["log_lines"] == 0
    assert shown["counts"]["steps"] > 0
    events = [e["event"] for e in shown["last_events"]]
    assert events == ["run_started", "checkpoint_saved", "run_completed"]

    code, out, _ = run_cli(capsys, "runs", "show", run_id[:20])  # a unique prefix
    assert code == 0
    assert "completed" in out and "run_completed" in out

    code, out, _ = run_cli(capsys, "runs", "list", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [run_id]
    code, out, _ = run_cli(capsys, "runs", "list")
    assert code == 0 and run_id in out


def test_run_json_result_and_explicit_store(
    capsys: pytest.CaptureFixture[str], fixture_workers: Path, tmp_path: Path
) -> None:
    store = tmp_path / "mine.sqlite"
    code, out, err = run_cli(
        capsys,
        "run",
        "fixture",
        "--set",
        "lines=7",
        "--run-id",
        "r-1",
        "--store",
        str(store),
        "--json",
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["run_id"] == "r-1"
    assert result["counts"]["steps"] == 7
    code, out, _ = run_cli(capsys, "runs", "show", "r-1", "--store", str(store), "--json")
    assert json.loads(out)["counts"]["steps"] == 7
    code, out, err = run_cli(capsys, "runs", "show", "r-1")  # not in the default store
    assert code == 2
    assert "no runs yet" in one_error_line(err)


def test_config_file_and_overrides(
    capsys: pytest.CaptureFixture[str], fixture_workers: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"metadata": {"worker": {"config": {"lines": 4, "seed": 1}}}}))
    code, out, err = run_cli(
        capsys, "run", "fixture", "--config", str(cfg), "--set", "lines=5", "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["counts"]["steps"] == 5
    written = json.loads((Path(result["run_dir"]) / "config.json").read_text())
    assert written["seed"] == 1 and written["lines"] == 5


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "exampel"], "did you mean 'example'"),
        (["run", "nothing-like-it"], "no worker named 'nothing-like-it'"),
        (["run", "example", "--config", "{missing}"], "does not exist"),
        (["run", "example", "--config", "{bad}"], "is not valid JSON (line 1"),
        (["run", "example", "--config", "{list}"], "a config is a JSON object"),
        (["run", "example", "--set", "colour=blue"], "unknown key 'colour'"),
        (["run", "example", "--set", 'episodes="many"'], "'episodes'"),
        (["run", "example", "--set", "episodes"], "not of the form key=value"),
        (["run", "example", "--run-id", "a/b"], "run_id 'a/b' contains '/'"),
        (["run", "example", "--run-id", ".."], "starts with '.'"),
        (["run", "example", "--store", "{nodir}/s.sqlite"], "does not exist; create it"),
        (["run", "example", "--grace", "-1"], "--grace -1.0 is not a finite number"),
        (["run", "broken"], "worker 'broken' (from MOSAIC_PLUGINS) is unavailable"),
        (["run", "future"], "speaks worker protocol 99"),
        (["runs", "show", "nope"], "does not exist"),
    ],
)
def test_bad_input_gets_one_line(
    capsys: pytest.CaptureFixture[str],
    fixture_workers: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    expected: str,
) -> None:
    monkeypatch.setenv(
        "MOSAIC_PLUGINS", os.environ["MOSAIC_PLUGINS"] + ",broken=a_module_that_is_not_there"
    )
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    paths = {
        "missing": tmp_path / "missing.json",
        "bad": tmp_path / "bad.json",
        "list": tmp_path / "list.json",
        "nodir": tmp_path / "no" / "such" / "dir",
    }
    argv = [a.format(**paths) for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    line = one_error_line(err)
    assert expected in line
    # nothing was started: no run in the default store
    store = Path(os.environ["MOSAIC_HOME"]) / "runs.sqlite"
    if store.exists():
        assert sqlite3.connect(store).execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_unknown_run_id_in_an_existing_store(
    capsys: pytest.CaptureFixture[str], fixture_workers: Path
) -> None:
    assert run_cli(capsys, "run", "fixture", "--quiet")[0] == 0
    code, _, err = run_cli(capsys, "runs", "show", "ZZZZ")
    assert code == 2
    assert "no run 'ZZZZ'" in one_error_line(err)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("garbage", "without writing run_completed"),
        ("crash", "exited with code 3 without writing run_failed; last stderr line: RuntimeError"),
        ("sigkill", "was killed by signal SIGKILL (-9) without writing run_failed"),
    ],
)
def test_failing_workers_end_with_exit_1_and_a_reason(
    capsys: pytest.CaptureFixture[str], fixture_workers: Path, mode: str, expected: str
) -> None:
    code, out, err = run_cli(capsys, "run", "fixture", "--set", f"mode={mode}", "--quiet")
    assert code == 1
    assert "Traceback" not in out
    summary = out.strip().splitlines()[-1]
    assert " failed (" in summary and expected in summary


def test_worker_that_cannot_start(
    capsys: pytest.CaptureFixture[str], fixture_workers: Path
) -> None:
    code, out, err = run_cli(capsys, "run", "missing", "--quiet")
    assert code == 1
    assert "cannot start the worker (/nonexistent/bin/no-such-python)" in out
    assert "Traceback" not in out + err


def test_plain_progress_lines_when_not_a_terminal(
    capsys: pytest.CaptureFixture[str], fixture_workers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.runner import live

    monkeypatch.setattr(live.PlainDisplay.__init__, "__defaults__", (None, 0.0))  # every update
    code, out, _ = run_cli(
        capsys, "run", "fixture", "--set", "mode=slow", "--set", "lines=3", "--set", "delay=0.05"
    )
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("[") and "steps=" in lines[0] and "episodes=" in lines[0]
    assert (
        lines[-1].startswith("run ")
        and " completed: 3 env steps, 3 step lines, 1 episodes" in lines[-1]
    )


def _wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_to_mosaic_run_cancels_with_130(
    fixture_workers: Path, tmp_path: Path, signum: int
) -> None:
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mosaic_sdk.cli",
            "run",
            "fixture",
            "--set",
            "mode=stubborn",
            "--store",
            str(store),
            "--run-id",
            "sig",
            "--grace",
            "0.5",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def ready() -> bool:
            try:
                conn = sqlite3.connect(store)
                try:
                    return bool(
                        conn.execute("SELECT 1 FROM events WHERE event = 'heartbeat'").fetchall()
                    )
                finally:
                    conn.close()
            except sqlite3.OperationalError:
                return False

        assert _wait_for(lambda: ready() or proc.poll() is not None), "the worker never started"
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "run sig cancelled" in out
    conn = sqlite3.connect(store)
    try:
        assert conn.execute("SELECT status FROM runs").fetchone() == ("cancelled",)
        [(synth,)] = conn.execute("SELECT synthesised FROM events WHERE event='run_cancelled'")
        assert synth == 1
        [(worker_pid,)] = conn.execute("SELECT worker_pid FROM runs")
    finally:
        conn.close()
    # the stubborn worker (which ignores SIGTERM) was killed after the grace period
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)


def test_runs_show_reports_a_dead_runner(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from mosaic_sdk.runner.storage.store import RunStore

    store = tmp_path / "s.sqlite"
    with RunStore(store) as s:
        s.create_run("orphaned", "example")
        # a pid that cannot be alive: the runner crashed and left 'running' behind
        s.conn.execute("UPDATE runs SET runner_pid = 2147483646 WHERE run_id = 'orphaned'")
    code, out, _ = run_cli(capsys, "runs", "show", "orphaned", "--store", str(store))
    assert code == 0
    assert "running (runner died: pid 2147483646 is gone)" in out
    code, out, _ = run_cli(capsys, "runs", "show", "orphaned", "--store", str(store), "--json")
    shown = json.loads(out)
    assert shown["status"] == "running" and shown["runner_alive"] is False
    assert shown["note"] == "runner died"


def test_runs_alone_lists(capsys: pytest.CaptureFixture[str], fixture_workers: Path) -> None:
    code, out, _ = run_cli(capsys, "runs")
    assert code == 2 and out == ""  # no store yet: one line on stderr
    assert run_cli(capsys, "run", "fixture", "--run-id", "only-one", "--quiet")[0] == 0
    code, out, _ = run_cli(capsys, "runs")
    assert code == 0
    header, row = out.strip().splitlines()
    assert header.split()[:3] == ["run", "id", "worker"]
    assert row.split()[:3] == ["only-one", "fixture", "completed"]
