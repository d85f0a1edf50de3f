"""``mosaic run path/to/train.py -- ARGS``: unchanged scripts (tests/runner/scripts/) run as the
built-in script worker, end to end, each ``mosaic run`` a process of its own.

What the scripts saw themselves (their own RecordEpisodeStatistics, their own count of
``add_scalar`` calls) is compared with what the store holds; control goes through ``mosaic
control RUN pause|resume|checkpoint|stop`` as docs/guides/bring-your-own-code.md shows it;
every bad input ends with its message, its status, and nothing left in /dev/shm."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.runner.control.control_socket import SOCKET_NAME
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.runner.storage.store import RunStore
from tests.conftest import returns

SCRIPTS = Path(__file__).resolve().parent / "scripts"
SHM = Path("/dev/shm")


def mosaic(*argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_script(
    tmp_path: Path, script: str, *args: str, options: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``mosaic run SCRIPT --json -- ARGS`` in ``tmp_path``: the process, and its result."""
    done = mosaic(
        "run", str(SCRIPTS / script), "--store", str(tmp_path / "runs.sqlite"), "--json",
        *options, "--", *args, cwd=tmp_path,
    )  # fmt: skip
    assert done.stdout, done.stderr
    return done, json.loads(done.stdout)


def stored(tmp_path: Path, run_id: str, name: str = "runs.sqlite") -> dict[str, Any]:
    with RunStore(tmp_path / name, readonly=True) as store:
        run = store.get_run(run_id)
        episodes = [json.loads(raw) for raw in store.episode_lines(run_id, "")]
        series = {
            info.name: store.series_points(run_id, info.name).values
            for info in store.series(run_id)
        }
        events = store.events(run_id)
        logs = [r["text"] for r in store.log_lines(run_id, stream="stderr")]
    return {"run": run, "episodes": episodes, "series": series, "events": events, "logs": logs}


def payload(events: list[Any], name: str) -> dict[str, Any]:
    [event] = [e for e in events if e["event"] == name]
    return json.loads(event["payload_json"])


def no_shm_left(run_id: str) -> None:
    left = [p.name for p in SHM.iterdir() if run_id in p.name] if SHM.is_dir() else []
    assert left == []


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_a_vector_env_script_runs_unchanged_and_the_run_holds_what_it_saw(
    tmp_path: Path, vectorization: str
) -> None:
    args = ["--steps", "120", "--num-envs", "3"]
    if vectorization == "async":
        args.append("--async-envs")
    done, result = run_script(tmp_path, "vector_train.py", *args)
    assert done.returncode == 0 and result["status"] == "completed", done.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    got = stored(tmp_path, result["run_id"])
    finished = [e for e in got["episodes"] if not e["metadata"].get("unfinished")]
    unfinished = [e for e in got["episodes"] if e["metadata"].get("unfinished")]
    # episodes stored with the returns (and lengths) the script itself saw
    assert seen["returns"] and sorted(e["total_reward"] for e in finished) == sorted(
        seen["returns"]
    )
    assert sorted(e["steps"] for e in finished) == sorted(seen["lengths"])
    assert len(unfinished) <= 3 and all(e["truncated"] for e in unfinished)
    # every scalar point is a series point, at the script's own steps
    counts = got["run"]["counts"]
    assert counts["series_points"] == seen["scalars"]
    assert sorted(got["series"]["charts/episodic_return"]) == sorted(seen["returns"])
    assert set(got["series"]) == {"charts/episodic_return", "losses/value", "losses/policy"}
    # the TensorBoard files the script writes are still written
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    # env steps: the sum over the envs (the reset steps of next-step autoreset are none)
    assert counts["env_steps"] == sum(e["steps"] for e in got["episodes"])
    # episodes: the finished ones (the unfinished rule: a cut episode is in no count)
    assert counts["env_steps"] <= 120 * 3 and counts["episodes"] == len(finished)
    assert result["env_steps"] == counts["env_steps"]
    # what the run records of the script
    config = got["run"]["config"]
    script = SCRIPTS / "vector_train.py"
    assert config["script"] == str(script)
    assert config["script_sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    assert config["args"] == args and config["cwd"] == str(tmp_path)
    assert config["environment"]["gymnasium"] and config["environment"]["numpy"]
    assert config["environment"]["python"] == ".".join(map(str, sys.version_info[:3]))
    started = payload(got["events"], "run_started")
    assert started["worker_type"] == "script" and started["script"]["args"] == args
    assert started["versions"]["python_executable"] == sys.executable
    assert any("done" in line for line in got["logs"])  # the script's print: its log
    no_shm_left(result["run_id"])


def test_the_summary_line_counts_env_steps_episodes_and_series_points(tmp_path: Path) -> None:
    done = mosaic(
        "run", str(SCRIPTS / "vector_train.py"), "--store", str(tmp_path / "s.sqlite"),
        "--quiet", "--", "--steps", "40", "--num-envs", "2", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    line = done.stdout.strip().splitlines()[-1]
    assert " completed: " in line and f"{seen['scalars']} series points" in line
    assert " env steps, " in line and " episodes, " in line


class LiveRun:
    """``mosaic run vector_train.py`` in a child process, slow enough to be controlled."""

    def __init__(self, tmp_path: Path, run_id: str, *script_args: str) -> None:
        self.tmp_path, self.run_id = tmp_path, run_id
        self.store = tmp_path / "runs.sqlite"
        self.progress = tmp_path / "progress.txt"
        argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", str(SCRIPTS / "vector_train.py"),
                "--store", str(self.store), "--run-id", run_id, "--json", "--grace", "20",
                "--", "--steps", "100000", "--delay", "0.01", "--progress", str(self.progress),
                *script_args]  # fmt: skip
        self.proc = subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.socket = runs_dir_for(self.store) / run_id / SOCKET_NAME
        self.wait_for(lambda: self.steps() > 5, "the script to step its envs")

    def wait_for(self, condition: Any, what: str, limit: float = 120) -> None:
        deadline = time.monotonic() + limit
        while not condition():
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, f"waited {limit} s for {what}"
            time.sleep(0.05)

    def steps(self) -> int:
        try:
            return int(self.progress.read_text() or 0)
        except (OSError, ValueError):
            return 0

    def control(self, command: str) -> tuple[int, dict[str, Any]]:
        done = mosaic("control", self.run_id, command, "--store", str(self.store), "--json",
                      cwd=self.tmp_path, timeout=60)  # fmt: skip
        return done.returncode, json.loads(done.stdout)

    def events(self) -> list[str]:
        with RunStore(self.store, readonly=True) as store:
            return [e["event"] for e in store.events(self.run_id)]

    def finish(self) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=120)
        assert out, err
        return json.loads(out)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=60)


def test_pause_holds_the_env_steps_still_until_resume_and_stop_ends_it_cancelled(
    tmp_path: Path,
) -> None:
    run = LiveRun(tmp_path, "script-control-1", "--checkpoint")
    try:
        code, reply = run.control("pause")
        assert code == 0 and reply["paused"] is True
        run.wait_for(lambda: "paused" in run.events(), "the paused event")
        held = run.steps()
        time.sleep(1.5)  # the script steps every 10 ms when it runs
        assert run.steps() == held
        # a checkpoint while paused: the script's own function, at the safe point
        code, reply = run.control("checkpoint")
        assert code == 0 and reply["checkpoint_path"] == "model.txt", reply
        assert (tmp_path / "model.txt").read_text() == "weights\n"
        code, reply = run.control("resume")
        assert code == 0 and reply["paused"] is False
        run.wait_for(lambda: run.steps() > held + 5, "the steps to go on after resume")
        code, reply = run.control("stop")
        assert code == 0 and reply["ok"] is True
        result = returns(run.finish, 60)  # ends within the grace period, not killed
    finally:
        run.kill()
    assert result["status"] == "cancelled", result
    assert result["exit_code"] == 143
    events = run.events()
    assert events.count("paused") == 1 and "resumed" in events and "checkpoint_saved" in events
    assert events[-1] == "run_cancelled"
    with RunStore(run.store, readonly=True) as store:
        cancelled = json.loads(store.events(run.run_id)[-1]["payload_json"])
    assert cancelled["reason"] == "stop command" and "by" not in cancelled  # the worker's own
    assert not run.socket.exists()
    no_shm_left(run.run_id)


def test_checkpoint_is_refused_with_the_reason_when_the_script_registers_none(
    tmp_path: Path,
) -> None:
    run = LiveRun(tmp_path, "script-control-2")
    try:
        code, reply = run.control("checkpoint")
        assert code == 1 and reply["error"]["code"] == "not_supported"
        assert reply["error"]["message"] == "this script registered no checkpoint function"
        assert "mosaic_sdk.script.on_checkpoint(save)" in reply["error"]["hint"]
        run.proc.send_signal(signal.SIGINT)  # Ctrl-C on mosaic run
        result = returns(run.finish, 60)
    finally:
        run.kill()
    assert result["status"] == "cancelled", result
    no_shm_left(run.run_id)


def test_a_script_that_does_not_exist_is_a_usage_error_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    done = mosaic("run", "missing/train.py", "--store", str(tmp_path / "s.sqlite"),
                  "--", "--lr", "3", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert "no such script: missing/train.py" in done.stderr and "nothing was run" in done.stderr
    assert not (tmp_path / "s.sqlite").exists() or not RunStore(tmp_path / "s.sqlite").list_runs()
    module = mosaic("run", "--module", "nowhere.train", "--store", str(tmp_path / "s.sqlite"),
                    cwd=tmp_path)  # fmt: skip
    assert module.returncode == 2 and "no module named nowhere" in module.stderr
    worker_args = mosaic("run", "example", "--", "--lr", "3", cwd=tmp_path)
    assert worker_args.returncode == 2 and "are a script's" in worker_args.stderr


def test_a_script_that_raises_at_import_fails_with_the_traceback_tail(tmp_path: Path) -> None:
    done, result = run_script(tmp_path, "raises_at_import.py")
    assert done.returncode == 1 and result["status"] == "failed"
    error = result["error"]
    assert error.startswith("KeyError: 'learning_rate' (File ")
    assert 'raises_at_import.py", line 6, in <module>: value = CONFIG["learning_rate"]' in error
    failed = payload(stored(tmp_path, result["run_id"])["events"], "run_failed")
    assert failed["error_type"] == "KeyError"
    assert "runpy" not in failed["traceback"] and "raises_at_import.py" in failed["traceback"]


def test_a_script_that_exits_3_fails_with_exit_code_3(tmp_path: Path) -> None:
    done, result = run_script(tmp_path, "exits_3.py")
    assert result["status"] == "failed" and result["exit_code"] == 3
    assert "exited with status 3" in result["error"]
    assert result["counts"]["episodes"] == 1  # what it played before is kept
    no_shm_left(result["run_id"])


def test_a_script_that_makes_no_env_completes_with_a_notice(tmp_path: Path) -> None:
    done, result = run_script(tmp_path, "no_env.py")
    assert done.returncode == 0 and result["status"] == "completed"
    assert result["counts"]["episodes"] == 0 and result["env_steps"] == 0
    assert "made no env" in done.stderr
    got = stored(tmp_path, result["run_id"])
    assert "made no env" in payload(got["events"], "run_completed")["notice"]
    assert any("made no env" in line for line in got["logs"])
    assert any("total 332833500" in line for line in got["logs"])


def test_a_script_that_ignores_sigterm_is_killed_after_the_grace_and_cancelled(
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "run", str(SCRIPTS / "ignores_sigterm.py"),
         "--store", str(tmp_path / "s.sqlite"), "--json", "--grace", "1", "--", str(ready)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the script never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = returns(lambda: proc.communicate(timeout=120), 150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    result = json.loads(out)
    assert result["status"] == "cancelled", (result, err)
    assert proc.returncode == 130
    no_shm_left(result["run_id"])


def test_binary_on_the_scripts_stdout_leaves_the_telemetry_whole(tmp_path: Path) -> None:
    done, result = run_script(tmp_path, "binary_stdout.py", str(tmp_path / "returns.json"))
    assert done.returncode == 0 and result["status"] == "completed", done.stderr
    returns_seen = json.loads((tmp_path / "returns.json").read_text())
    got = stored(tmp_path, result["run_id"])
    assert [e["total_reward"] for e in got["episodes"]] == returns_seen
    counts = got["run"]["counts"]
    assert counts["invalid_lines"] == 0  # nothing but telemetry on the worker's stdout
    assert counts["episodes"] == 3  # the fake episode line went to the log, not the store
    assert any("binary on stderr too" in line for line in got["logs"])
    assert any('"not": "telemetry"' in line for line in got["logs"])


def test_frames_of_an_env_that_renders_rgb_array_reach_fastlane(tmp_path: Path) -> None:
    from mosaic_sdk.fastlane import FastLaneError, FastLaneReader

    run_id, stop = "script-pixels-1", tmp_path / "stop"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "run", str(SCRIPTS / "pixels.py"),
         "--store", str(tmp_path / "s.sqlite"), "--run-id", run_id, "--json", "--", str(stop)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    sizes: set[tuple[int, int]] = set()
    try:
        deadline = time.monotonic() + 120
        while not sizes:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no FastLane frame within 120 s"
            try:
                reader = FastLaneReader.attach(run_id)
            except FastLaneError:
                time.sleep(0.1)
                continue
            try:
                frame = reader.latest_frame()
                if frame is not None:
                    sizes.add((frame.width, frame.height))
            finally:
                reader.close()
            time.sleep(0.05)
        stop.write_text("")
        out, err = returns(lambda: proc.communicate(timeout=120), 150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert sizes == {(48, 32)}
    result = json.loads(out)
    assert result["status"] == "completed", err
    started = payload(stored(tmp_path, run_id, "s.sqlite")["events"], "run_started")
    assert started["fastlane"]["video_mode"] == "single"
    no_shm_left(run_id)


MODULE = """
import json, sys
import gymnasium as gym

env = gym.make("CartPole-v1")
env.reset(seed=2)
done = False
while not done:
    _, _, terminated, truncated, _ = env.step(0)
    done = terminated or truncated
json.dump(sys.argv, open("argv.json", "w"))
"""


def test_a_module_runs_as_python_m_runs_it(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text(MODULE)
    done = mosaic("run", "--module", "pkg.train", "--store", str(tmp_path / "runs.sqlite"),
                  "--json", "--", "--lr", "3", cwd=tmp_path)  # fmt: skip
    result = json.loads(done.stdout)
    assert result["status"] == "completed", done.stderr
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv == [str(tmp_path / "pkg" / "train.py"), "--lr", "3"]
    config = stored(tmp_path, result["run_id"])["run"]["config"]
    assert config["module"] == "pkg.train" and config["script"] is None
    source = (tmp_path / "pkg" / "train.py").read_bytes()
    assert config["script_sha256"] == hashlib.sha256(source).hexdigest()
    assert result["counts"]["episodes"] == 1
