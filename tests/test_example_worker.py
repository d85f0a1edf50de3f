"""The example worker through its real CLI (the shared worker_main contract)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mosaic_sdk.telemetry import classify_line, validate_line


def run_worker(
    config: dict | str, tmp_path: Path, *extra: str, env: dict | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "config.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(path), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
        env={**os.environ, **(env or {}), "MOSAIC_RUN_DIR": str(tmp_path)},
    )


def parsed(stdout: str) -> list[dict]:
    out = []
    for raw in stdout.splitlines():
        line = classify_line(raw)
        assert line.is_telemetry, f"not telemetry: {raw!r}"
        assert validate_line(line.data) == [], raw
        out.append(line.data)
    return out


def test_full_run_emits_every_kind_in_order_and_writes_analytics(tmp_path: Path) -> None:
    res = run_worker(
        {
            "run_id": "ex1",
            "episodes": 3,
            "seed": 1,
            "heartbeat_interval": 0.05,
            "step_delay_ms": 0.2,
            "max_steps_per_episode": 200,
        },
        tmp_path,
    )
    assert res.returncode == 0, res.stderr
    lines = parsed(res.stdout)
    assert lines[0]["event"] == "run_started" and lines[-1]["event"] == "run_completed"
    assert [x["seq"] for x in lines] == list(range(1, len(lines) + 1))
    steps = [x for x in lines if x["type"] == "step"]
    episodes = [x for x in lines if x["type"] == "episode"]
    assert len(episodes) == 3 and sum(e["steps"] for e in episodes) == len(steps)
    assert any(x.get("event") == "heartbeat" for x in lines)
    analytics = json.loads((tmp_path / "analytics.json").read_text())
    assert analytics["episodes"] == 3 and analytics["steps"] == len(steps)
    assert analytics["returns"] == [e["total_reward"] for e in episodes]
    assert analytics["status"] == "completed"


def strip_times(lines: list[dict]) -> list[dict]:
    return [
        {k: v for k, v in x.items() if k not in ("ts_unix_ns", "timestamp")}
        for x in lines
        if x["type"] in ("step", "episode")
    ]


def test_same_seed_same_telemetry(tmp_path: Path) -> None:
    cfg = {"run_id": "det", "episodes": 2, "seed": 11, "policy": "random"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = run_worker(cfg, tmp_path / "a")
    b = run_worker(cfg, tmp_path / "b")
    assert strip_times(parsed(a.stdout)) == strip_times(parsed(b.stdout))
    c = run_worker({**cfg, "seed": 12}, tmp_path / "a")
    assert strip_times(parsed(c.stdout)) != strip_times(parsed(a.stdout))


def test_dry_run_validates_and_writes_nothing(tmp_path: Path) -> None:
    res = run_worker({"run_id": "d"}, tmp_path, "--dry-run")
    assert res.returncode == 0 and res.stdout == ""
    assert "dry run" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]
    bad_env = run_worker({"run_id": "d", "env_id": "NoSuchEnv-v9"}, tmp_path, "--dry-run")
    assert bad_env.returncode == 2 and "NoSuchEnv-v9" in bad_env.stderr


def test_dry_run_needs_no_run_id(tmp_path: Path) -> None:
    # A config checked before any run exists has no run id yet; a dry run writes nothing.
    res = run_worker({"episodes": 2}, tmp_path, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and "dry run" in res.stderr
    nested = {"metadata": {"worker": {"config": {"episodes": 2}}}}
    assert run_worker(nested, tmp_path, "--dry-run").returncode == 0
    # a bad run id is still refused, and a real run still needs one
    assert run_worker({"run_id": "../x"}, tmp_path, "--dry-run").returncode == 2
    real = run_worker({"episodes": 1}, tmp_path)
    assert real.returncode == 2 and "run_id" in real.stderr


def test_bad_configs_end_with_run_failed_and_exit_2(tmp_path: Path) -> None:
    cases = {
        '{"run_id": "b", "episodes": "lots"}': "'episodes'",
        '{"run_id": "b", "colour": 1}': "unknown key 'colour'",
        '{"run_id": "../b"}': "run_id",
        '{"run_id": "b",': "not valid JSON",
    }
    for text, message in cases.items():
        res = run_worker(text, tmp_path)
        assert res.returncode == 2, text
        assert message in res.stderr and "Traceback" not in res.stderr
        (line,) = parsed(res.stdout)
        assert line["event"] == "run_failed" and message in line["payload"]["error"]
    missing = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_sigterm_ends_the_run_with_run_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "c", "episodes": 1000, "step_delay_ms": 2}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)},
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # run_started: the worker is running
    assert json.loads(first)["event"] == "run_started"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 143
    lines = parsed(first + out)
    assert lines[-1]["event"] == "run_cancelled"
    assert json.loads((tmp_path / "analytics.json").read_text())["status"] == "cancelled"


def test_other_env_ids_work(tmp_path: Path) -> None:
    res = run_worker(
        {
            "run_id": "mc",
            "env_id": "Pendulum-v1",
            "episodes": 1,
            "max_steps_per_episode": 20,
            "policy": "random",
            "seed": 0,
        },
        tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert sum(1 for x in parsed(res.stdout) if x["type"] == "step") == 20


def test_platform_cli_flags_are_accepted(tmp_path: Path) -> None:
    """--worker-id tags every line; --grpc/--grpc-target are reserved by the platform."""
    res = run_worker(
        {"run_id": "flags", "episodes": 1, "max_steps_per_episode": 5},
        tmp_path,
        "--worker-id",
        "w7",
        "--grpc",
        "--grpc-target",
        "127.0.0.1:50055",
        "-v",
    )
    assert res.returncode == 0, res.stderr
    lines = parsed(res.stdout)
    assert lines and all(x["worker_id"] == "w7" for x in lines)
    assert "--grpc is reserved" in res.stderr
