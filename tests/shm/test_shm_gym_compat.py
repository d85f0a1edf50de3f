"""ShmVectorEnv follows gymnasium's vector-env behaviour (our own tests of each rule)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gym_envs import EchoEnv, ExactEnv, Probe, broken_constructor, cartpole, probe
from gymnasium.error import ClosedEnvironmentError
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from mosaic_sdk.shm.segment import segment_exists
from mosaic_sdk.shm.side import SideAreaFull
from mosaic_sdk.shm.vector_env import ShmVectorEnv

Box, Discrete, Dict, Tuple = gym.spaces.Box, gym.spaces.Discrete, gym.spaces.Dict, gym.spaces.Tuple


def test_values_arrive_exactly_in_their_own_dtypes(segments) -> None:
    envs = ShmVectorEnv([ExactEnv, ExactEnv], name=segments.name())
    try:
        obs, _ = envs.reset()
        assert obs.dtype == np.int32 and obs[0, 0] == 16777217  # float32 would say 16777216
        action = 2**25 + 3  # float32 would carry 2**25 + 4
        obs, rewards, _, _, infos = envs.step(np.array([action, 5]))
        assert infos["action"].tolist() == [action, 5]
        assert rewards.dtype == np.float64 and rewards[0] == 0.1  # not 0.10000000149
        assert obs[:, 1].tolist() == [2, 2]
    finally:
        envs.close()


def test_seeds_and_action_space_sampling_match_sync_vector_env(segments) -> None:
    fns = [cartpole(seed) for seed in (3, 4, 5)]
    shm, ref = ShmVectorEnv(fns, name=segments.name()), SyncVectorEnv(fns)
    try:
        shm.reset(seed=42)
        assert shm.np_random_seed == (42, 43, 44)
        shm.reset()
        assert shm.np_random_seed == (42, 43, 44), "an unseeded reset keeps the seeds"
        state = shm.action_space.np_random.bit_generator.state
        assert state == ref.action_space.np_random.bit_generator.state
        for _ in range(20):
            assert np.array_equal(shm.action_space.sample(), ref.action_space.sample())
    finally:
        shm.close()
        ref.close()


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_autoreset_modes_and_step_infos_match_sync_vector_env(segments, mode) -> None:
    fns = [cartpole(seed, max_steps=5 + seed) for seed in range(4)]
    shm = ShmVectorEnv(fns, name=segments.name(), autoreset_mode=mode, num_workers=2)
    ref = SyncVectorEnv(fns, autoreset_mode=mode)
    try:
        assert shm.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"] == mode
        got, want = shm.reset(seed=7), ref.reset(seed=7)
        assert data_equivalence(got, want)
        seen_final = 0
        rng = np.random.default_rng(0)
        for _ in range(30):
            actions = rng.integers(0, 2, size=4)
            got, want = shm.step(actions), ref.step(actions)
            assert data_equivalence(got, want), f"step differs under {mode}"
            seen_final += int("final_obs" in want[4]) + int("episode" in want[4])
            if mode == AutoresetMode.DISABLED and (want[2] | want[3]).any():
                mask = want[2] | want[3]
                got = shm.reset(options={"reset_mask": mask})
                want = ref.reset(options={"reset_mask": mask})
                assert data_equivalence(got, want)
        assert seen_final > 0, "episodes must end within the run for this test to mean much"
    finally:
        shm.close()
        ref.close()


NESTED = Dict(
    {
        "pos": Box(-1.0, 1.0, (2, 3), np.float64),
        "id": Discrete(5, start=-2),
        "pair": Tuple((gym.spaces.MultiBinary(3), gym.spaces.MultiDiscrete([4, 7]))),
        "tiny": Box(0, 255, (), np.uint8),
        "half": Box(-1, 1, (3,), np.float16),
    }
)
VARIABLE = Tuple((gym.spaces.Text(6), gym.spaces.Sequence(Discrete(3)), Discrete(4)))


@pytest.mark.parametrize(
    "space", [NESTED, VARIABLE, gym.spaces.Graph(Box(0, 1, (2,)), Discrete(2))], ids=str
)
def test_nested_and_variable_size_spaces_match_sync_vector_env(segments, space) -> None:
    fns = [lambda: EchoEnv(copy.deepcopy(space), copy.deepcopy(space)) for _ in range(3)]
    shm = ShmVectorEnv(fns, name=segments.name(), num_workers=2)
    ref = SyncVectorEnv(fns)
    try:
        assert shm.observation_space == ref.observation_space
        assert data_equivalence(shm.reset(seed=1), ref.reset(seed=1))
        shm.action_space.seed(9)
        for _ in range(4):
            actions = shm.action_space.sample()
            got, want = shm.step(actions), ref.step(actions)
            assert data_equivalence(got, want)
            assert got[4]["ok"].all() if "ok" in got[4] else True
    finally:
        shm.close()
        ref.close()


def test_call_get_attr_and_set_attr(segments) -> None:
    envs = ShmVectorEnv([probe(i) for i in range(3)], name=segments.name(), num_workers=2)
    try:
        assert envs.call("scaled", 1.5, factor=10.0) == (15.0, 16.0, 17.0)
        assert envs.get_attr("ident") == (0, 1, 2)
        envs.set_attr("level", [0.5, 1.5, 2.5])
        assert envs.get_attr("level") == (0.5, 1.5, 2.5)
        envs.set_attr("level", 9.0)
        assert envs.get_attr("level") == (9.0, 9.0, 9.0)
        with pytest.raises(ValueError, match="length equal to the number of environments"):
            envs.set_attr("level", [1.0, 2.0])
        with pytest.raises(AttributeError):
            envs.get_attr("no_such_attribute")
        big = envs.call("scaled", np.ones(300_000))  # 7 MB of results: beyond one ring entry
        assert [float(b[0]) for b in big] == [2.0, 3.0, 4.0]
    finally:
        envs.close()


def test_env_exceptions_keep_their_type(segments) -> None:
    envs = ShmVectorEnv([probe(0), probe(1)], name=segments.name(), num_workers=2)
    try:
        envs.reset()
        with pytest.raises(LookupError, match="env 1 cannot do 1") as caught:
            envs.step(np.array([0, 1]))
        assert any("env host process" in note for note in caught.value.__notes__)
        with pytest.raises(KeyError, match="no such level"):
            envs.reset(options={"explode": True})
    finally:
        envs.close()


@pytest.mark.parametrize("num_workers", [1, 2])
def test_a_failing_env_constructor_raises_its_own_error(segments, num_workers) -> None:
    fns = [probe(0), broken_constructor]
    with pytest.raises(FileNotFoundError, match="level-7.xml"):  # as SyncVectorEnv raises it
        ShmVectorEnv(fns, name=segments.name(), num_workers=num_workers)
    assert not segment_exists(segments.names[-1])


def test_closed_env_raises_closed_environment_error(segments) -> None:
    envs = ShmVectorEnv([probe(0)], name=segments.name())
    envs.close()
    envs.close()  # twice is fine, as in gymnasium
    for operation in (envs.reset, lambda: envs.step(np.zeros(1, np.int64)), envs.render):
        with pytest.raises(ClosedEnvironmentError):
            operation()
    with pytest.raises(ClosedEnvironmentError):
        envs.get_attr("ident")
    assert not segment_exists(segments.names[-1])


@pytest.mark.parametrize(
    ("observation_mode", "error"), [("same", RuntimeError), ("different", TypeError)]
)
def test_inconsistent_sub_envs_are_refused_at_construction(
    segments, observation_mode, error
) -> None:
    fns = [cartpole(0), lambda: gym.make("FrozenLake-v1")]
    with pytest.raises(error):  # the type SyncVectorEnv raises for this mode
        SyncVectorEnv(fns, observation_mode=observation_mode)
    with pytest.raises(error, match="observation spaces|same type"):
        ShmVectorEnv(fns, name=segments.name(), observation_mode=observation_mode)
    assert not segment_exists(segments.names[-1]), "the refused env's host is torn down"
    with pytest.raises(ValueError, match="Invalid `observation_mode`"):
        ShmVectorEnv(fns, name=segments.name(), observation_mode="mixed")
    with pytest.raises(RuntimeError, match="action space"):
        ShmVectorEnv(
            [lambda: EchoEnv(Discrete(2), Discrete(2)), lambda: EchoEnv(Discrete(2), Discrete(3))],
            name=segments.name(),
        )


def test_observation_mode_different_batches_differing_bounds(segments) -> None:
    spaces = [Box(0, high, (2,), np.float32) for high in (1, 2, 3)]
    fns = [lambda s=s: EchoEnv(s, Discrete(2)) for s in spaces]
    shm = ShmVectorEnv(fns, name=segments.name(), observation_mode="different")
    ref = SyncVectorEnv(fns, observation_mode="different")
    try:
        assert shm.observation_space == ref.observation_space
        assert shm.single_observation_space == spaces[0]
        assert data_equivalence(shm.reset(seed=2), ref.reset(seed=2))
    finally:
        shm.close()
        ref.close()


def test_infos_too_large_for_the_side_area_fail_clearly(segments) -> None:
    space = gym.spaces.Box(0, 1, (3000,), np.float64)
    fns = [lambda: EchoEnv(space, Discrete(2), done_every=1)]
    envs = ShmVectorEnv(fns, name=segments.name(), side_size=4096, autoreset_mode="SameStep")
    try:
        envs.reset(seed=0)
        with pytest.raises(SideAreaFull, match="larger side_size"):
            envs.step(np.zeros(1, np.int64))  # final_obs of 24 kB does not fit 4 kB
    finally:
        envs.close()


def test_copy_false_returns_views_of_shared_memory(segments) -> None:
    envs = ShmVectorEnv([probe(0), probe(1)], name=segments.name(), copy=False)
    try:
        obs, _ = envs.reset()
        base = envs.client.base_address + envs.client.layout.obs_offset
        assert obs.ctypes.data == base
        assert Probe.observation_space.contains(obs[0])
    finally:
        envs.close()
