"""The store and the run's files through whole runs: a locked store, two stores with one run
id, a race for one id, private files, read-only stores, a reused runner pid."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mosaic_sdk.runner.reporting import Reporter
from mosaic_sdk.runner.storage.store import RunStore, StoreError
from mosaic_sdk.runner.supervisor import RunSupervisor, resolve_worker, run_worker
from mosaic_sdk.shm.processes import process_start_ticks


def _stored_steps(path: Path) -> int:
    conn = sqlite3.connect(path, timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
    except sqlite3.OperationalError:  # no table yet
        return 0
    finally:
        conn.close()


def test_a_store_locked_by_another_process_loses_no_row(
    fixture_workers: Path,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from mosaic_sdk.runner.storage import store

    real = store.connect
    # every busy timeout 0.3 s: a lock of a few seconds stands for one longer than 30 s
    monkeypatch.setattr(store, "connect", lambda path, timeout=30.0: real(path, timeout=0.3))
    RunStore(store_path).close()
    box: dict = {}
    reporter = Reporter()
    config = {"mode": "slow", "lines": 120, "delay": 0.03}
    runner = threading.Thread(
        target=lambda: box.update(
            r=run_worker("fixture", config, store=store_path, reporter=reporter)
        )
    )
    runner.start()
    deadline = time.monotonic() + 60
    while _stored_steps(store_path) == 0:  # wait until the run is storing, however slow the host
        assert runner.is_alive() and time.monotonic() < deadline, "the run stored no step"
        time.sleep(0.02)
    holder = sqlite3.connect(store_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    time.sleep(4)
    holder.execute("ROLLBACK")
    holder.close()
    runner.join(60)
    result = box["r"]
    assert result.status == "completed", result.error
    assert result.lost_rows == 0
    assert result.counts["steps"] == 120
    assert capfd.readouterr() == ("", "")  # the library prints nothing: its reporter hears it
    told = "\n".join(reporter.warnings)
    assert "database is locked" in told and "takes writes again" in told


def test_two_stores_never_share_a_run_directory(fixture_workers: Path, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_worker("fixture", {"lines": 3}, run_id="same", store=tmp_path / "a" / "runs.sqlite")
    second = run_worker(
        "fixture", {"lines": 5}, run_id="same", store=tmp_path / "b" / "runs.sqlite"
    )
    assert first.status == second.status == "completed"
    assert first.run_dir == tmp_path / "a" / "runs" / "same"
    assert second.run_dir == tmp_path / "b" / "runs" / "same"
    assert json.loads((first.run_dir / "config.json").read_text())["lines"] == 3
    assert json.loads((second.run_dir / "config.json").read_text())["lines"] == 5
    # runs show finds each run's own files
    for result in (first, second):
        with RunStore(result.store_path, readonly=True) as store:
            run = store.get_run("same")
        assert Path(run["run_dir"]) == result.run_dir
        assert Path(run["stderr_path"]) == result.run_dir / "stderr.log"


def test_a_shared_runs_dir_refuses_a_second_run_with_that_id(
    fixture_workers: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-runs"
    run_worker("fixture", {"lines": 3}, run_id="same", store=tmp_path / "a.sqlite", runs_dir=shared)
    with pytest.raises(FileExistsError, match="exists already"):
        run_worker(
            "fixture", {"lines": 5}, run_id="same", store=tmp_path / "b.sqlite", runs_dir=shared
        )
    assert json.loads((shared / "same" / "config.json").read_text())["lines"] == 3
    with RunStore(tmp_path / "b.sqlite") as store:  # the refused run left no row
        assert store.list_runs() == []


def test_two_runners_with_one_id_one_gets_it_the_other_a_clear_error(
    fixture_workers: Path, store_path: Path
) -> None:
    first = RunSupervisor(resolve_worker("fixture"), {"lines": 4}, run_id="dup", store=store_path)
    # the id is claimed when the first supervisor is made, before any file is written
    with pytest.raises(StoreError, match="already in the store"):
        RunSupervisor(resolve_worker("fixture"), {"lines": 9}, run_id="dup", store=store_path)
    result = first.run()
    assert result.status == "completed"
    assert json.loads((result.run_dir / "config.json").read_text())["lines"] == 4


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_and_run_files_are_private(
    fixture_workers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = os.umask(0o022)
    try:
        home = tmp_path / "home"
        monkeypatch.setenv("MOSAIC_HOME", str(home))
        result = run_worker("fixture", {"mode": "crash"})
    finally:
        os.umask(old)
    assert _mode(home) == 0o700
    assert _mode(home / "runs.sqlite") == 0o600
    assert _mode(home / "runs") == 0o700
    assert _mode(result.run_dir) == 0o700
    assert _mode(result.run_dir / "config.json") == 0o600
    assert _mode(result.run_dir / "stderr.log") == 0o600
    assert (result.run_dir / "stderr.log").read_text()  # the crash wrote to it
    with RunStore(home / "runs.sqlite"):  # the WAL files take the store's mode
        for suffix in ("-wal", "-shm"):
            assert _mode(Path(str(home / "runs.sqlite") + suffix)) == 0o600


def test_runner_alive_compares_the_start_time_not_only_the_pid(store_path: Path) -> None:
    with RunStore(store_path) as store:
        store.create_run("mine", "w")
        assert store.get_run("mine")["runner_alive"] is True
        assert process_start_ticks(os.getpid()) > 0
        # the same pid, started at another time: a reused pid, so the runner is gone
        store.conn.execute("UPDATE runs SET runner_start_ticks = runner_start_ticks + 1")
        assert store.get_run("mine")["runner_alive"] is False


def _without_write_access() -> list[str] | None:
    """A command prefix under which permission bits hold (as root they do not)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def test_runs_list_and_show_work_on_a_store_nobody_may_write(
    fixture_workers: Path, tmp_path: Path
) -> None:
    prefix = _without_write_access()
    if prefix is None:
        pytest.skip("running as root without setpriv: permission bits cannot be enforced")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    store_path = shelf / "runs.sqlite"
    result = run_worker("fixture", {"lines": 7}, run_id="ro", store=store_path)
    before = sorted(p.name for p in shelf.iterdir())
    assert before == ["runs", "runs.sqlite"]  # closed cleanly: no -wal/-shm left
    store_path.chmod(0o444)
    shelf.chmod(0o555)
    try:
        listed = subprocess.run(
            [*prefix, sys.executable, "-m", "mosaic_sdk.cli", "runs", "list", "--json"]
            + ["--store", str(store_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
        assert [r["run_id"] for r in json.loads(listed.stdout)] == ["ro"]
        shown = subprocess.run(
            [*prefix, sys.executable, "-m", "mosaic_sdk.cli", "runs", "show", "ro", "--json"]
            + ["--store", str(store_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["counts"]["steps"] == result.counts["steps"] == 7
        # and it really could not write there: a write attempt under the same rules fails
        denied = subprocess.run(
            [*prefix, "sh", "-c", f"touch {shelf / 'x'}"], capture_output=True, check=False
        )
        assert denied.returncode != 0
    finally:
        shelf.chmod(0o755)
        store_path.chmod(0o600)
    assert sorted(p.name for p in shelf.iterdir()) == before


def test_a_readonly_store_connection_writes_nothing(
    fixture_workers: Path, store_path: Path
) -> None:
    run_worker("fixture", {"lines": 3}, run_id="r", store=store_path)
    before = store_path.read_bytes()
    with RunStore(store_path, readonly=True) as store:
        assert [r["run_id"] for r in store.list_runs()] == ["r"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.conn.execute("UPDATE runs SET status = 'failed'")
    assert store_path.read_bytes() == before
    # a store being written: the read-only connection sees what the WAL holds
    with RunStore(store_path) as writer:
        writer.create_run("live", "w")
        with RunStore(store_path, readonly=True) as store:
            assert {r["run_id"] for r in store.list_runs()} == {"r", "live"}
    with pytest.raises(StoreError, match="not a mosaic store|cannot read"):
        other = store_path.with_name("other.sqlite")
        other.write_bytes(b"not a database at all" * 100)
        RunStore(other, readonly=True)


@pytest.fixture
def echo_worker(fixture_workers: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MOSAIC_PLUGINS", os.environ["MOSAIC_PLUGINS"] + ",echo=store_workers:Echo")
    return "echo"


def _lines_file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="ascii")
    return path


def test_a_run_of_hostile_values_stores_every_line_and_completes(
    echo_worker: str, tmp_path: Path, store_path: Path
) -> None:
    huge = "1" + "0" * 400
    block = [
        '{"type": "step", "episode_index": "\\ud800", "step_index": 1, "reward": 1.0}',
        f'{{"type": "step", "episode_index": 0, "step_index": 2, "reward": {huge}}}',
        f'{{"type": "episode", "episode_index": 0, "total_reward": {huge}, "steps": 2}}',
        '{"type": "lifecycle", "event": "\\udcff", "payload": {}}',
        '{"type": "step", "episode_index": 0, "step_index": 3, "reward": 0.5}',
    ]
    done = '{"type": "lifecycle", "event": "run_completed", "payload": {}}'
    lines = [*block * 4000, done]  # 20,001 lines: far more than the writer's queue holds
    result = run_worker(
        echo_worker, {"lines_file": str(_lines_file(tmp_path, lines))}, store=store_path
    )
    assert result.status == "completed", result.error
    assert result.lost_rows == 0
    c = result.counts
    assert c["steps"] + c["episodes"] + c["events"] + c["log_lines"] == len(lines)
    conn = sqlite3.connect(store_path)
    try:
        raws = conn.execute(
            "SELECT raw FROM steps UNION ALL SELECT raw FROM episodes"
            " UNION ALL SELECT raw FROM events UNION ALL SELECT text FROM log_lines"
        ).fetchall()
    finally:
        conn.close()
    assert sorted(r for (r,) in raws) == sorted(lines)


def test_a_store_that_fails_makes_a_failed_run_with_the_count_everywhere(
    echo_worker: str,
    tmp_path: Path,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mosaic_sdk.cli import main
    from mosaic_sdk.runner.storage import writer

    class Broken(BaseException):
        pass

    calls = {"n": 0}
    real = writer.insert_batch

    def insert(conn, run_id, batch):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        # The writer thread ends at its second transaction, a few ms into a run of 20,000
        # lines (the second takes whatever queued up behind the first, so a later one could
        # come only after the reader's last look at the writer).
        if calls["n"] == 2:
            raise Broken("the writer thread ends")
        return real(conn, run_id, batch)

    monkeypatch.setattr(writer, "insert_batch", insert)
    step = '{"type": "step", "episode_index": 0, "step_index": 1, "reward": 1.0}'
    done = '{"type": "lifecycle", "event": "run_completed", "payload": {}}'
    lines = _lines_file(tmp_path, [step] * 20000 + [done])
    code = main(
        ["run", echo_worker, "--set", f"lines_file={lines}", "--store", str(store_path), "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 1
    shown = json.loads(out)
    assert shown["status"] == "failed"
    lost = shown["lost_rows"]
    assert lost > 0
    assert f"{lost} rows lost" in shown["error"]
    assert err.count("store writer") == 1 and "stopped" in err  # told once, however fast
    with RunStore(store_path, readonly=True) as store:
        run = store.get_run(shown["run_id"])
    assert run["status"] == "failed" and run["lost_rows"] == lost
    stored = run["counts"]["steps"] + run["counts"]["events"]
    assert stored + lost == 20001
