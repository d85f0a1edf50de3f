"""The local engine end to end with the example worker: trials tagged in the store, a crashing
trial stored failed while the sweep goes on, Ctrl-C to the driver, ``--resume``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import alive, worker_pids

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.driver import run_sweep
from mosaic_sdk.sweeps.store import SweepStore

SHORT = {"episodes": 2, "max_steps_per_episode": 20, "include_observations": False}


def test_trials_are_tagged_runs_and_a_crashing_trial_does_not_stop_the_sweep(
    tmp_path: Path, shm_unchanged: None
) -> None:
    store = tmp_path / "s.sqlite"
    said: list[str] = []
    result = run_sweep(
        "example",
        {
            "base": SHORT,
            "space": {"env_id": {"grid": ["NoSuchEnv-v0", "CartPole-v1"]}},
            "seeds": [1, 2],
            "metric": {"name": "steps", "last": 2},
            "trials_at_once": 2,
        },
        store=store,
        report=said.append,
    )
    assert result.status == "completed" and result.exit_code == 0
    by_status: dict[str, list[dict]] = {}
    for t in result.trials:
        by_status.setdefault(t["status"], []).append(t)
    assert len(by_status["failed"]) == 2 and len(by_status["completed"]) == 2
    assert result.trials[0]["status"] == "completed"  # best first; failed trials have no metric
    with RunStore(store, readonly=True) as runs:
        for t in result.trials:
            run = runs.get_run(t["run_id"])
            assert run["status"] == t["status"] == t["run_status"]
            assert run["config"]["seed"] == t["params"]["seed"]
            assert run["config"]["env_id"] == t["params"]["env_id"]
            if t["status"] == "completed":
                assert t["metric"] == 20.0  # the balancing policy reaches the 20-step limit
                assert run["counts"]["episodes"] == 2
            else:
                assert t["metric"] is None and "NoSuchEnv" in (run["error"] or "")
        sweep = SweepStore(runs).get_sweep(result.sweep_id)
    assert sweep["status"] == "completed" and sweep["spec"]["seeds"] == [1, 2]
    assert sum("failed" in line for line in said) == 2


def _sweep_cli(store: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mosaic_sdk.cli",
        "sweep",
        "example",
        *args,
        "--store",
        str(store),
    ]


def _statuses(store: Path) -> list[str]:
    conn = sqlite3.connect(store)
    try:
        return [r[0] for r in conn.execute("SELECT status FROM sweep_trials")]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def test_ctrl_c_cancels_every_trial_and_resume_runs_only_what_did_not_finish(
    tmp_path: Path, shm_unchanged: None
) -> None:
    store = tmp_path / "s.sqlite"
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "base": {**SHORT, "episodes": 3, "step_delay_ms": 15},
                "space": {"policy": {"grid": ["balance", "random"]}},
                "seeds": "1-3",
                "trials_at_once": 2,
            }
        )
    )
    driver = subprocess.Popen(
        _sweep_cli(store, str(spec)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while "completed" not in _statuses(store) or _statuses(store).count("running") < 1:
            assert driver.poll() is None, driver.stdout.read() if driver.stdout else ""
            assert time.monotonic() < deadline, "no trial completed in time"
            time.sleep(0.05)
        driver.send_signal(signal.SIGINT)
        out, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 130, out
    statuses = _statuses(store)
    assert "running" not in statuses and "cancelled" in statuses, (statuses, out)
    assert len(statuses) < 6  # pending trials were not started
    for pid in worker_pids(store):
        assert not alive(pid), f"worker {pid} outlived the sweep"
    conn = sqlite3.connect(store)
    sweep_id, sweep_status = conn.execute("SELECT sweep_id, status FROM sweeps").fetchone()
    finished_before = dict(
        conn.execute("SELECT trial_key, run_id FROM sweep_trials WHERE status = 'completed'")
    )
    conn.close()
    assert sweep_status == "cancelled"

    resumed = subprocess.run(
        _sweep_cli(store, "--resume", sweep_id[:10]), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{len(finished_before)} of 6 trials finished" in resumed.stdout
    with RunStore(store, readonly=True) as runs:
        sweeps = SweepStore(runs)
        trials = sweeps.trials(sweep_id)
        assert sweeps.get_sweep(sweep_id)["status"] == "completed"
    last = {}
    for t in sorted(trials, key=lambda t: t["attempt"]):
        last[t["trial_key"]] = t
    assert sorted(last) == [f"t{i:04d}" for i in range(6)]
    assert all(t["status"] == "completed" for t in last.values())
    for key, run_id in finished_before.items():  # finished trials were not run again
        assert [t["run_id"] for t in trials if t["trial_key"] == key] == [run_id]
    assert any(t["attempt"] == 2 for t in trials)  # the cancelled ones ran again


def test_cli_shorthands_then_sweeps_list_and_show_best_first(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    done = subprocess.run(
        _sweep_cli(store, "--grid", "max_steps_per_episode=5,9", "--seeds", "1-2") + ["--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["trials"]) == 4
    assert [t["metric"] for t in result["trials"]] == sorted(
        (t["metric"] for t in result["trials"]), reverse=True
    )
    cli = [sys.executable, "-m", "mosaic_sdk.cli", "sweeps"]
    listed = subprocess.run(cli + ["list", "--store", str(store)], capture_output=True, text=True)
    assert result["sweep_id"] in listed.stdout and "completed" in listed.stdout
    shown = subprocess.run(
        cli + ["show", result["sweep_id"][:12], "--store", str(store)],
        capture_output=True,
        text=True,
    )
    rows = [line for line in shown.stdout.splitlines() if line.startswith("t0")]
    assert len(rows) == 4, shown.stdout
    assert '"max_steps_per_episode": 9' in rows[0] and '"max_steps_per_episode": 5' in rows[-1]
    # `mosaic runs plot --sweep`, as docs/guides/sweeps.md shows it: the 4 trials become one
    # mean line per parameter set (2)
    guide = (Path(__file__).parents[2] / "docs" / "guides" / "sweeps.md").read_text("utf-8")
    [shown] = [line for line in guide.splitlines() if line.startswith("mosaic runs plot --sweep")]
    argv = shown.replace("SWEEP", result["sweep_id"]).replace("sweeps.sqlite", str(store))
    plotted = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *argv.split()[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert plotted.returncode == 0, plotted.stderr
    assert "4 trial run(s)" in plotted.stdout and "(4 runs, 2 curves" in plotted.stdout
    assert (tmp_path / "sweep.png").read_bytes().startswith(b"\x89PNG")
    out = tmp_path / "sweep.svg"
    missing = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "runs", "plot", "--sweep", "nope"]
        + ["--store", str(store), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no sweep 'nope'" in missing.stderr


def test_a_bad_spec_starts_nothing_and_names_every_bad_value(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    done = subprocess.run(
        _sweep_cli(store, "--grid", "episodes=2,0", "--grid", "policy=random,greedy"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "space.episodes.grid value 0" in done.stderr
    assert "space.policy.grid value 'greedy'" in done.stderr
    assert "nothing was started" in done.stderr
    if store.exists():
        conn = sqlite3.connect(store)
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        conn.close()


def test_a_spec_too_big_to_run_exits_2_with_its_count_and_leaves_no_sweep(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    spec = tmp_path / "big.json"
    spec.write_text(
        json.dumps({"space": {"step_delay_ms": {"uniform": [0, 1]}}, "samples": 1_000_000_000})
    )
    for argv in (["--seeds", "1-100000000"], [str(spec)]):
        done = subprocess.run(_sweep_cli(store, *argv), capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "nothing was started" in done.stderr and "--max-trials" in done.stderr
        assert "100,000,000 seeds" in done.stderr or "1,000,000,000 trials" in done.stderr
    if store.exists():
        conn = sqlite3.connect(store)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if "sweeps" in tables:
            assert conn.execute("SELECT count(*) FROM sweeps").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        conn.close()


def test_max_trials_0_is_a_usage_error_that_says_the_least(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    for argv in (["--seeds", "1-3", "--max-trials", "0"], ["--resume", "x", "--max-trials", "0"]):
        done = subprocess.run(_sweep_cli(store, *argv), capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.splitlines()
        assert "--max-trials 0: give a whole number >= 1" in line, line
    assert not store.exists()


def test_resume_after_the_driver_is_killed_marks_its_attempts_lost_and_runs_them_again(
    tmp_path: Path, fixture_worker: str, shm_unchanged: None
) -> None:
    """The trials wait on a gate file, so both are still running when the driver is killed
    however slow the machine is; the resumed driver's attempts find the gate open."""
    store = tmp_path / "s.sqlite"
    spec = tmp_path / "spec.json"
    gate = tmp_path / "gate"
    spec.write_text(
        json.dumps(
            {
                "base": {"mode": "gated", "gate": str(gate)},
                "space": {"lines": {"grid": [1, 2]}},
                "trials_at_once": 2,
            }
        )
    )
    cli = [sys.executable, "-m", "mosaic_sdk.cli", "sweep", fixture_worker]
    driver = subprocess.Popen(
        [*cli, str(spec), "--store", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while _statuses(store).count("running") < 2:
            assert driver.poll() is None, "the sweep ended before both trials ran"
            assert time.monotonic() < deadline, "the trials did not start in time"
            time.sleep(0.05)
        conn = sqlite3.connect(store)
        (sweep_id,) = conn.execute("SELECT sweep_id FROM sweeps").fetchone()
        conn.close()
        # A second driver may not take over a sweep whose driver is alive.
        refused = subprocess.run(
            [*cli, "--resume", sweep_id, "--store", str(store)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 2 and f"pid {driver.pid}, is alive" in refused.stderr
        driver.kill()
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for pid in worker_pids(store):  # the killed driver's trials, orphaned
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert _statuses(store).count("running") == 2  # what a SIGKILL leaves behind

    gate.touch()
    resumed = subprocess.run(
        [*cli, "--resume", sweep_id, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "2 attempt(s) whose driver is gone are marked lost" in resumed.stdout
    with RunStore(store, readonly=True) as runs:
        trials = SweepStore(runs).trials(sweep_id)
    by_attempt = sorted((t["trial_key"], t["attempt"], t["status"]) for t in trials)
    assert by_attempt == [
        ("t0000", 1, "lost"),
        ("t0000", 2, "completed"),
        ("t0001", 1, "lost"),
        ("t0001", 2, "completed"),
    ]
    lost = [t for t in trials if t["status"] == "lost"]
    assert all(f"pid {driver.pid}" in t["error"] for t in lost)


def test_trial_timeout_stops_a_hanging_trial_and_stores_it_failed_with_the_reason(
    tmp_path: Path, fixture_worker: str, shm_unchanged: None
) -> None:
    """A worker that hangs (``stubborn`` ignores SIGTERM; ``polite`` stops on it) no longer
    holds its slot: after trial_timeout it gets SIGTERM, then SIGKILL after the grace, and the
    trial and its run end failed, "timed out after 5 s"; the quick trial completes."""
    store = tmp_path / "s.sqlite"
    result = run_sweep(
        fixture_worker,
        {
            "space": {"mode": {"grid": ["stubborn", "polite", "steps"]}},
            "trials_at_once": 3,
            "trial_timeout": 5,  # the quick trial ends well inside it under load
        },
        store=store,
        grace=0.5,
        report=lambda _m: None,
    )
    assert result.status == "completed"
    by_mode = {t["params"]["mode"]: t for t in result.trials}
    assert by_mode["steps"]["status"] == "completed"
    with RunStore(store, readonly=True) as runs:
        for mode, killed in (("stubborn", True), ("polite", False)):
            trial = by_mode[mode]
            assert trial["status"] == trial["run_status"] == "failed", trial
            assert trial["error"].startswith("timed out after 5 s"), trial["error"]
            run = runs.get_run(trial["run_id"])
            assert run["status"] == "failed" and run["error"] == trial["error"]
            assert (run["exit_code"] == -signal.SIGKILL) is killed, run["exit_code"]
            assert _events_of(runs, trial["run_id"])[-1] == "run_failed"
        sweep = SweepStore(runs).get_sweep(result.sweep_id)
    assert sweep["spec"]["trial_timeout"] == 5
    for pid in worker_pids(store):
        assert not alive(pid)


def test_trial_stall_after_stops_a_silent_trial_and_stores_it_failed_with_the_reason(
    tmp_path: Path, fixture_worker: str, shm_unchanged: None
) -> None:
    """A worker that stops writing but stays alive (``hang``) is stopped after
    trial_stall_after seconds of silence and stored failed, "stalled: ..."; the runner's
    ``stalled`` event is in its run; a trial that keeps writing completes."""
    store = tmp_path / "s.sqlite"
    result = run_sweep(
        fixture_worker,
        {
            "space": {"mode": {"grid": ["hang", "steps"]}},
            "trials_at_once": 2,
            "trial_stall_after": 1,
        },
        store=store,
        grace=0.5,
        report=lambda _m: None,
    )
    assert result.status == "completed"
    by_mode = {t["params"]["mode"]: t for t in result.trials}
    assert by_mode["steps"]["status"] == "completed"
    hung = by_mode["hang"]
    assert hung["status"] == hung["run_status"] == "failed", hung
    assert hung["error"].startswith("stalled: no output for "), hung["error"]
    assert "limit 1 s" in hung["error"]
    with RunStore(store, readonly=True) as runs:
        events = _events_of(runs, hung["run_id"])
        assert "stalled" in events and events[-1] == "run_failed"
        assert "stalled" not in _events_of(runs, by_mode["steps"]["run_id"])
        sweep = SweepStore(runs).get_sweep(result.sweep_id)
    assert sweep["spec"]["trial_stall_after"] == 1
    for pid in worker_pids(store):
        assert not alive(pid)


def test_trial_stall_after_on_the_command_line(
    tmp_path: Path, fixture_worker: str, shm_unchanged: None
) -> None:
    store = tmp_path / "s.sqlite"
    cli = [sys.executable, "-m", "mosaic_sdk.cli", "sweep", fixture_worker, "--store", str(store)]
    done = subprocess.run(
        [*cli, "--grid", "mode=hang", "--trial-stall-after", "1", "--grace", "0.5", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # no trial completed
    (trial,) = json.loads(done.stdout)["trials"]
    assert trial["status"] == "failed" and trial["error"].startswith("stalled: no output for ")
    refused = subprocess.run(
        [*cli, "--resume", "01X", "--trial-stall-after", "1"], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "--trial-stall-after" in refused.stderr
    for pid in worker_pids(store):
        assert not alive(pid), f"worker {pid} outlived the sweep"


def _events_of(runs: RunStore, run_id: str) -> list[str]:
    return [e["event"] for e in runs.events(run_id)]


def test_trial_timeout_on_the_command_line(
    tmp_path: Path, fixture_worker: str, shm_unchanged: None
) -> None:
    store = tmp_path / "s.sqlite"
    cli = [sys.executable, "-m", "mosaic_sdk.cli", "sweep", fixture_worker, "--store", str(store)]
    done = subprocess.run(
        [*cli, "--grid", "mode=stubborn", "--trial-timeout", "1", "--grace", "0.5", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # no trial completed
    (trial,) = json.loads(done.stdout)["trials"]
    assert trial["status"] == "failed" and trial["error"].startswith("timed out after 1 s")
    refused = subprocess.run(
        [*cli, "--resume", "01X", "--trial-timeout", "1"], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "--trial-timeout" in refused.stderr
    local = subprocess.run(
        [*cli, "--seeds", "1", "--connect-timeout", "5"], capture_output=True, text=True
    )
    assert local.returncode == 2 and "--connect-timeout" in local.stderr
