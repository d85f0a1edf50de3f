"""The gymnasium 0.29 compatibility layer upstream CleanRL scripts run under (the SDK's own
patches are tested in tests/instrument)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from mosaic_worker_cleanrl.gym_compat import install_compat


def _short_cartpole() -> Any:
    env = gymnasium.make("CartPole-v1", max_episode_steps=3)
    return gymnasium.wrappers.RecordEpisodeStatistics(env)


def test_legacy_vector_env_reports_final_observation_and_info_in_the_old_shape() -> None:
    undo = install_compat()
    try:
        envs = gymnasium.vector.SyncVectorEnv([_short_cartpole, _short_cartpole])
        envs.reset(seed=0)
        for _ in range(3):
            obs, _, terminated, truncated, infos = envs.step(np.array([0, 1]))
        envs.close()
    finally:
        undo()
    done = terminated | truncated
    assert done.any()
    assert infos["final_observation"].dtype == object and infos["final_info"].dtype == object
    for i in range(2):
        if done[i]:
            assert infos["final_observation"][i].shape == (4,)
            assert infos["final_info"][i]["episode"]["l"] <= 3
        else:
            assert infos["final_observation"][i] is None and infos["final_info"][i] is None
    assert list(infos["_final_info"]) == list(done)
    assert gymnasium.vector.SyncVectorEnv.__name__ == "SyncVectorEnv"  # restored


def test_old_wrapper_spellings_work_while_installed_and_vanish_after() -> None:
    undo = install_compat()
    try:
        env = gymnasium.make("CartPole-v1")
        env = gymnasium.wrappers.TransformObservation(env, lambda o: np.clip(o, -1, 1))
        env = gymnasium.wrappers.FrameStack(env, 2)
        obs, _ = env.reset(seed=1)
        assert obs.shape == (2, 4) and np.abs(obs).max() <= 1
        env.close()
    finally:
        undo()
    assert not hasattr(gymnasium.wrappers, "FrameStack")
