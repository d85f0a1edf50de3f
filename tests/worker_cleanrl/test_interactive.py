"""Interactive mode: a checkpoint trained here, stepped over the control protocol and over the
deployed dialect 1.0 the platform's GUI speaks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mosaic_sdk.control.session import ControlCommandError, Session
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink
from worker_cleanrl.worker_runs import run_worker, unique_run_id


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    runs = tmp_path_factory.mktemp("interactive-runs")
    config = {"run_id": unique_run_id("train"), "algo": "ppo", "total_timesteps": 512, "seed": 2,
              "algo_params": {"num_steps": 128, "update_epochs": 1}}  # fmt: skip
    result = run_worker(runs, config)
    assert result.returncode == 0, result.why()
    return str(result.events("checkpoint_saved")[-1]["payload"]["checkpoint_path"])


def start(tmp_path: Path, checkpoint: str, fastlane: bool) -> Session:
    run_id = unique_run_id("play")
    run_dir = tmp_path / run_id
    run_dir.mkdir()
    path = run_dir / "config.json"
    path.write_text(
        json.dumps({"run_id": run_id, "mode": "interactive", "policy_path": checkpoint})
    )
    env = {**os.environ, "MOSAIC_RUN_ID": run_id, "MOSAIC_RUN_DIR": str(run_dir)}
    env["MOSAIC_FASTLANE"] = "1" if fastlane else "0"
    argv = [sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(path)]
    return Session.launch(argv, env=env, run_id=run_id, run_dir=run_dir, timeout=60)


def test_the_trained_policy_steps_and_replays(tmp_path: Path, checkpoint: str) -> None:
    session = start(tmp_path, checkpoint, fastlane=True)
    try:
        init = session.wait_for(lambda x: x.get("type") == "init", timeout=120)
        assert init == {"type": "init", "run_id": session.run_id, "env_id": "CartPole-v1",
                        "algo": "ppo", "policy_path": checkpoint, "version": "1.0"}  # fmt: skip
        loaded = session.wait_for(lambda x: x.get("event") == "checkpoint_loaded")
        assert loaded["payload"]["checkpoint_path"] == os.path.abspath(checkpoint)

        def episode() -> list:
            out = [session.reset(seed=9).observation]
            for _ in range(30):
                reply = session.step()
                out.append((reply.action, reply.reward, reply.observation))
                assert reply.frame is not None and reply.frame.fastlane_run_id == session.run_id
                if reply.episode_done:
                    break
            return out

        first = episode()
        assert first == episode() and len(first) > 1
        obs = first[0]
        assert session.act(obs).action == first[1][0]  # act queries the same greedy policy
        with pytest.raises(ControlCommandError) as info:
            session.checkpoint()
        assert info.value.code == "not_supported"
        assert session.close().closed
        assert session.wait_exit(30) == 0
        assert session.events()[-1] == "run_completed"
    finally:
        session.kill()
        shm_unlink(segment_name(session.run_id or ""))


def test_the_platform_dialect_drives_it_unchanged(tmp_path: Path, checkpoint: str) -> None:
    session = start(tmp_path, checkpoint, fastlane=False)
    try:
        session.wait_for(lambda x: x.get("type") == "init", timeout=120)
        for command in ({"cmd": "ping"}, {"cmd": "reset", "seed": 1}, {"cmd": "step"},
                        {"cmd": "stop"}):  # fmt: skip
            session.send_line(json.dumps(command))
        assert session.wait_exit(60) == 143
        kinds = [x["type"] for x in session.dialect_lines]
        assert kinds == ["init", "pong", "ready", "step", "stopped"]
        ready, step = session.dialect_lines[2], session.dialect_lines[3]
        assert ready["observation_shape"] == [4] and ready["seed"] == 1
        assert step["action"] in (0, 1) and step["step_index"] == 1
    finally:
        session.kill()
