"""Host processes: every start method works, and a forked child leaves its parent's envs alone."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
from gym_envs import cartpole, probe
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import SyncVectorEnv

from mosaic_sdk.shm.vector_env import ShmVectorEnv


@pytest.mark.parametrize("context", ["spawn", "forkserver", "fork"])
def test_every_start_method_runs_the_same_trajectories(segments, context: str) -> None:
    fns = [cartpole(seed, max_steps=4) for seed in range(3)]
    shm = ShmVectorEnv(fns, name=segments.name(), context=context, num_workers=2, timeout=60)
    ref = SyncVectorEnv(fns)
    try:
        assert data_equivalence(shm.reset(seed=11), ref.reset(seed=11))
        for step in range(6):
            actions = np.array([step % 2, 1, 0])
            assert data_equivalence(shm.step(actions), ref.step(actions))
    finally:
        shm.close()
        ref.close()


def test_a_forked_child_leaves_its_parents_envs_alone(segments) -> None:
    """A child forked while an env is open (e.g. a later env's host) may collect the env it
    inherited: that must neither shut the parent's engine down nor join its hosts."""
    envs = ShmVectorEnv([probe(0), probe(1)], name=segments.name(), num_workers=2)
    try:
        envs.reset()
        pid = os.fork()
        if pid == 0:  # the child: drop its copy of the env and collect, then leave quietly
            try:
                del envs
                gc.collect()
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        obs, *_ = envs.step(np.zeros(2, np.int64))  # the parent's engine still serves
        assert obs.shape == (2, 1)
        assert envs._host is not None and envs._host.alive()
        # a second env launched with fork after the first works too
        other = ShmVectorEnv([probe(2)], name=segments.name(), context="fork")
        assert other.get_attr("ident") == (2,)
        other.close()
        assert envs.get_attr("ident") == (0, 1)
    finally:
        envs.close()
