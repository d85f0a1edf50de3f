"""The curriculum env id in env subprocesses: registered there, switching with the worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker_cleanrl.worker_runs import run_worker, unique_run_id

SCRIPT = '''
"""Probe: a script whose envs live in env subprocesses (run as cleanrl.dqn)."""
import argparse

import gymnasium as gym

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-id", type=str, default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, default=200)
    parser.add_argument("--context", type=str, default="spawn")
    args = parser.parse_args()
    envs = gym.vector.AsyncVectorEnv(
        [lambda: gym.make(args.env_id)] * 2, context=args.context
    )
    envs.reset(seed=1)
    envs.action_space.seed(1)
    for _ in range(args.total_timesteps // 2):
        envs.step(envs.action_space.sample())
    envs.close()
'''


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_env_subprocesses_play_the_curriculum_the_worker_advances(
    runs: Path, tmp_path: Path, context: str
) -> None:
    root = tmp_path / "checkout"
    (root / "cleanrl").mkdir(parents=True)
    (root / "cleanrl" / "__init__.py").write_text("")
    (root / "cleanrl" / "dqn.py").write_text(SCRIPT)
    schedule = [
        {"env_id": "CartPole-v1", "env_kwargs": {"max_episode_steps": 4}, "until": "episodes>=6"},
        {"env_id": "CartPole-v1", "env_kwargs": {"max_episode_steps": 7}},
    ]
    config = {"run_id": unique_run_id("currsub"), "algo": "dqn", "total_timesteps": 200,
              "cleanrl_path": str(root), "curriculum_schedule": schedule,
              "algo_params": {"context": context}}  # fmt: skip
    result = run_worker(runs, config, timeout=240)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    stages = result.events("curriculum_stage")
    assert [(s["payload"]["from_stage"], s["payload"]["to_stage"]) for s in stages] == [(0, 1)]
    assert stages[0]["payload"]["completed"]["episodes"] == 6
    finished = [e for e in result.episodes() if not e["metadata"].get("unfinished")]
    by_stage = {0: [], 1: []}
    for episode in finished:
        by_stage[episode["metadata"]["curriculum_stage"]].append(episode["steps"])
    assert by_stage[0] and max(by_stage[0]) <= 4
    assert by_stage[1] and max(by_stage[1]) == 7, by_stage
    assert not (result.run_dir / ".curriculum_stage.json").exists()
    assert result.analytics()["extra"]["curriculum"]["final"]["stage"] == 1
