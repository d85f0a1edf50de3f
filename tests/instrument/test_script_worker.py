"""The ``script`` worker's process on its own (``python -m mosaic_sdk.instrument --config``, no
runner): its stdout carries telemetry only, a command on its stdin reaches the run, the
script's exit status is the worker's. (``mosaic run script.py`` end to end:
tests/runner/test_script_runs.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.instrument.script_config import ScriptConfig

SCRIPT = textwrap.dedent(
    """
    import sys
    import gymnasium as gym
    import mosaic_sdk.script

    print("hello from the script")
    sys.stdout.buffer.write(b"\\x00\\xff not telemetry\\n")
    env = gym.make("CartPole-v1", max_episode_steps=8)
    env.reset(seed=0)
    mosaic_sdk.script.on_checkpoint(lambda: "saved.pt")
    for _ in range(20):  # 2 episodes of 8 steps, then 4 steps of a third
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()
    sys.exit(int(sys.argv[1]))
    """
)


def run_worker(
    tmp_path: Path, status: int, stdin: str = ""
) -> tuple[int, list[dict[str, Any]], str]:
    (tmp_path / "train.py").write_text(SCRIPT)
    config = {"run_id": "sw-1", "script": str(tmp_path / "train.py"), "args": [str(status)],
              "telemetry_step_every": 1}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.instrument", "--config", str(tmp_path / "config.json")],
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        errors="replace",  # the script writes binary (to its stdout: the worker's stderr)
        timeout=300,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    return done.returncode, lines, done.stderr


def test_telemetry_alone_on_stdout_and_the_last_episode_unfinished(tmp_path: Path) -> None:
    code, lines, stderr = run_worker(tmp_path, 0)
    assert code == 0, stderr
    assert "hello from the script" in stderr and "not telemetry" in stderr
    episodes = [d for d in lines if d["type"] == "episode"]
    assert [(e["steps"], e["metadata"].get("unfinished", False)) for e in episodes] == [
        (8, False),
        (8, False),
        (4, True),
    ]
    steps = [d for d in lines if d["type"] == "step"]
    assert len(steps) == 20  # every step a line (telemetry_step_every=1)
    assert {d["episode_index"] for d in steps} == {e["episode_index"] for e in episodes}
    completed = lines[-1]
    # the unfinished rule: the cut episode is in no count of episodes, and no return
    assert completed["event"] == "run_completed" and completed["payload"]["episodes"] == 2
    assert completed["payload"]["total_reward"] == 16.0  # the unfinished one not counted
    assert completed["payload"]["final_metrics"]["steps"] == 20


def test_the_scripts_exit_status_is_the_workers(tmp_path: Path) -> None:
    code, lines, _ = run_worker(tmp_path, 3)
    assert code == 3
    failed = lines[-1]
    assert failed["event"] == "run_failed" and failed["payload"]["exit_code"] == 3
    assert failed["payload"]["error"].endswith("exited with status 3")


def test_a_checkpoint_command_runs_the_scripts_function_at_an_env_step(tmp_path: Path) -> None:
    command = json.dumps({"v": 1, "id": "c1", "cmd": "checkpoint"}) + "\n"
    code, lines, stderr = run_worker(tmp_path, 0, stdin=command)
    assert code == 0, stderr
    replies = [d for d in lines if d["type"] == "control_reply"]
    saved = [d for d in lines if d.get("event") == "checkpoint_saved"]
    # the command may come before the function is registered (refused) or after (saved)
    assert len(replies) == 1
    if replies[0]["ok"]:
        assert replies[0]["checkpoint_path"] == "saved.pt"
        assert saved[0]["payload"]["checkpoint_path"] == str(tmp_path / "saved.pt")
    else:
        assert replies[0]["error"]["message"] == "this script registered no checkpoint function"


def test_the_config_takes_a_script_or_a_module() -> None:
    assert ScriptConfig(run_id="r", module="pkg.train").target_text() == "-m pkg.train"
    with pytest.raises(ValueError, match="exactly one of script"):
        ScriptConfig(run_id="r")
    with pytest.raises(ValueError, match="exactly one of script"):
        ScriptConfig(run_id="r", script="a.py", module="a")
