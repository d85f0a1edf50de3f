"""The worker's gym 0.23 layer: the old API on gymnasium, visible only where the worker puts it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from mosaic_worker_cleanrl.legacy_gym import GYM_DIR, gym_module_on_path

from worker_cleanrl.worker_runs import run_worker, unique_run_id


def test_gym_is_not_importable_here_nor_in_a_fresh_interpreter() -> None:
    assert importlib.util.find_spec("gym") is None
    out = subprocess.run(
        [sys.executable, "-c", "import gym"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0 and "No module named 'gym'" in out.stderr


def test_the_layer_is_gone_after_the_block() -> None:
    with gym_module_on_path():
        import gym

        assert gym.__version__ == "0.23.1"
    assert str(GYM_DIR) not in sys.path
    assert not [n for n in sys.modules if n == "gym" or n.startswith("gym.")]
    with pytest.raises(ImportError):
        import gym  # noqa: F401,F811


def test_single_env_has_the_old_api_and_seeds_once() -> None:
    with gym_module_on_path():
        import gym
        from gym.spaces import Discrete

        assert Discrete is gymnasium.spaces.Discrete  # the same classes as gymnasium's
        firsts = []
        for _ in range(2):
            env = gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))
            env.seed(7)
            firsts.append(env.reset())
        np.testing.assert_array_equal(firsts[0], firsts[1])
        assert isinstance(env.action_space, Discrete)
        obs, reward, done, info = env.step(0)
        assert obs.shape == (4,) and reward == 1.0 and done is False
        env.close()

        env = gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1", max_episode_steps=3))
        env.seed(0)
        env.reset()
        done, steps = False, 0
        while not done:
            _, _, done, info = env.step(0 if steps % 2 else 1)
            steps += 1
        assert steps == 3 and info["TimeLimit.truncated"] is True
        assert info["episode"]["l"] == 3 and info["episode"]["r"] == 3.0


def test_vector_env_gives_list_infos_with_terminal_observation() -> None:
    with gym_module_on_path():
        import gym

        def make_env(seed: int):
            def thunk():
                env = gym.make("CartPole-v1", max_episode_steps=4 + seed)
                env = gym.wrappers.RecordEpisodeStatistics(env)
                env.seed(seed)
                return env

            return thunk

        envs = gym.vector.SyncVectorEnv([make_env(0), make_env(1)])
        obs = envs.reset()
        assert obs.shape == (2, 4) and isinstance(envs.single_action_space, gym.spaces.Discrete)
        for step in range(1, 6):
            before = obs
            obs, rewards, dones, infos = envs.step(np.array([1, 0]))
            assert isinstance(infos, list) and len(infos) == 2
            assert rewards.tolist() == [1.0, 1.0]
            expected = [step == 4, step == 5]
            assert dones.tolist() == expected
            for i, done in enumerate(expected):
                if done:
                    info = infos[i]
                    assert info["TimeLimit.truncated"] is True
                    assert info["episode"]["l"] == 4 + i
                    # the final observation is the episode's, obs is already the next reset's
                    assert not np.array_equal(info["terminal_observation"], obs[i])
                    assert not np.array_equal(info["terminal_observation"], before[i])
                else:
                    assert "terminal_observation" not in infos[i]
        envs.close()


def test_an_unknown_gym_name_says_what_the_layer_offers() -> None:
    with gym_module_on_path():
        import gym

        with pytest.raises(AttributeError, match="offers make, spaces, vector"):
            gym.Wrapper  # noqa: B018
        with pytest.raises(AttributeError, match="no gymnasium counterpart"):
            gym.wrappers.Monitor  # noqa: B018


SCRIPT = '''
"""Probe: a gym 0.23 script (run as cleanrl.c51) and a child process it starts."""
import argparse
import json
import subprocess
import sys

import gym

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-id", type=str, default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    child = subprocess.run([sys.executable, "-c", "import gym"], capture_output=True, text=True)
    def thunk():
        env = gym.wrappers.RecordEpisodeStatistics(gym.make(args.env_id, max_episode_steps=8))
        env.seed(args.seed)
        return env
    envs = gym.vector.SyncVectorEnv([thunk, thunk])
    obs = envs.reset()
    finished = 0
    for _ in range(args.total_timesteps // 2):
        obs, rewards, dones, infos = envs.step(envs.action_space.sample())
        finished += sum("episode" in info for info in infos)
    envs.close()
    with open("probe.json", "w") as f:
        json.dump({"child_rc": child.returncode, "finished": finished,
                   "gym_file": gym.__file__}, f)
'''


def test_a_gym_script_runs_under_the_worker_and_its_children_get_no_gym(
    runs: Path, tmp_path: Path
) -> None:
    root = tmp_path / "checkout"
    (root / "cleanrl").mkdir(parents=True)
    (root / "cleanrl" / "__init__.py").write_text("")
    (root / "cleanrl" / "c51.py").write_text(SCRIPT)
    config = {"run_id": unique_run_id("gymlayer"), "algo": "c51", "env_id": "CartPole-v1",
              "total_timesteps": 40, "seed": 3, "cleanrl_path": str(root)}  # fmt: skip
    result = run_worker(runs, config, timeout=240)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    probe = json.loads((result.run_dir / "probe.json").read_text())
    assert probe["child_rc"] != 0, "a child of the script cannot import gym"
    assert Path(probe["gym_file"]).parent.parent == GYM_DIR
    assert probe["finished"] == 4  # 2 envs x 20 steps, episodes of 8
    episodes = result.episodes()
    assert len([e for e in episodes if not e["metadata"].get("unfinished")]) == 4
    assert result.events("run_started")[0]["payload"]["gym_compat"] is True


ASYNC_SCRIPT = '''
"""Probe: gym.vector.AsyncVectorEnv of the layer, env subprocesses started with spawn."""
import argparse
import json

import gym

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-id", type=str, default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, default=40)
    args = parser.parse_args()
    def thunk():
        import os
        env = gym.wrappers.RecordEpisodeStatistics(gym.make(args.env_id, max_episode_steps=5))
        env.seed(os.getpid())
        return env
    envs = gym.vector.AsyncVectorEnv([thunk, thunk], context="spawn")
    envs.reset()
    finished = 0
    for _ in range(args.total_timesteps // 2):
        _, _, dones, infos = envs.step(envs.action_space.sample())
        finished += sum("episode" in info and "terminal_observation" in info for info in infos)
    envs.close()
    with open("probe.json", "w") as f:
        json.dump({"finished": finished}, f)
'''


def test_env_subprocesses_of_a_gym_script_get_the_layer_too(runs: Path, tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "cleanrl").mkdir(parents=True)
    (root / "cleanrl" / "__init__.py").write_text("")
    (root / "cleanrl" / "c51.py").write_text(ASYNC_SCRIPT)
    config = {"run_id": unique_run_id("gymasync"), "algo": "c51", "total_timesteps": 40,
              "cleanrl_path": str(root)}  # fmt: skip
    result = run_worker(runs, config, timeout=240)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    assert json.loads((result.run_dir / "probe.json").read_text())["finished"] == 8
    finished = [e for e in result.episodes() if not e["metadata"].get("unfinished")]
    assert len(finished) == 8 and all(e["steps"] == 5 for e in finished)
