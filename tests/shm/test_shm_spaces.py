"""Gymnasium spaces through the transport: wire form and packed rows."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import spaces
from mosaic_sdk.shm.packing import RowCodec

SPACES = [
    gym.spaces.Box(-1.0, 2.0, (3, 2), np.float32),
    gym.spaces.Box(np.array([0, -np.inf]), np.array([1, np.inf]), (2,), np.float64),
    gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
    gym.spaces.Discrete(5, start=-2),
    gym.spaces.MultiDiscrete([3, 4, 5], start=[1, 0, -1]),
    gym.spaces.MultiBinary(6),
    gym.spaces.MultiBinary([2, 3]),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_space_survives_the_wire(space: gym.Space) -> None:
    spec = cmd.decode(
        cmd.encode(cmd.GetSchemaResponse(1, 1, 1, spaces.to_spec(space), None), 1)
    ).message.observation_space
    assert spaces.from_spec(spec) == space


NESTED = gym.spaces.Dict(
    {
        "a": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,), np.float16))),
        "b": gym.spaces.Box(0, 2**31 - 1, (3,), np.int32),
        "c": gym.spaces.MultiBinary(5),
    }
)


@pytest.mark.parametrize("space", [*SPACES, NESTED], ids=repr)
def test_values_survive_packed_rows_exactly(space: gym.Space) -> None:
    """Every leaf keeps its dtype: values come back bit for bit, batched as gymnasium does."""
    codec = RowCodec(space)
    assert codec.fixed and codec.row_bytes % 8 == 0
    for leaf in codec.leaves:
        assert leaf.offset % leaf.dtype.itemsize == 0, "each leaf is aligned to its item size"
    space.seed(0)
    values = [space.sample() for _ in range(4)]
    rows = np.zeros((4, codec.words), np.float32)
    views = codec.leaf_views(rows)
    codec.write_values(views, values, 0)
    back = codec.read_values(views, 0, 4)
    assert data_equivalence(back, values)
    batch = codec.batch(views, copy=True)
    assert data_equivalence(batch, concatenate(space, values, create_empty_array(space, 4)))
    assert batch in batch_space(space, 4)
    rows[:] = 0
    codec.write_batch(views, batch)
    assert data_equivalence(codec.read_values(views, 0, 4), values)


def test_values_that_float32_would_round_stay_exact() -> None:
    space = gym.spaces.Tuple(
        (
            gym.spaces.Box(0, 2**30, (), np.int32),
            gym.spaces.Discrete(2**26),
            gym.spaces.Box(-1, 1, (), np.float64),
        )
    )
    codec = RowCodec(space)
    rows = np.zeros((1, codec.words), np.float32)
    value = (np.int32(16777217), np.int64(2**25 + 3), np.float64(0.1))
    codec.write_values(codec.leaf_views(rows), [value], 0)
    assert codec.read_values(codec.leaf_views(rows), 0, 1)[0] == value


@pytest.mark.parametrize(
    "space",
    [gym.spaces.Text(5), gym.spaces.Dict({"t": gym.spaces.Sequence(gym.spaces.Discrete(2))})],
    ids=repr,
)
def test_variable_size_spaces_are_not_fixed(space: gym.Space) -> None:
    assert not RowCodec(space).fixed


def test_wrong_action_batches_get_gymnasiums_error_types() -> None:
    codec = RowCodec(gym.spaces.Discrete(2))
    views = codec.leaf_views(np.zeros((4, codec.words), np.float32))
    with pytest.raises(TypeError, match="scalar"):
        codec.write_batch(views, 0)
    with pytest.raises(ValueError, match="3 actions for 4 envs"):
        codec.write_batch(views, np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="structure"):
        RowCodec(NESTED).write_batch(RowCodec(NESTED).leaf_views(np.zeros((4, 8))), {"a": 1})


def test_spaces_without_a_wire_spec_are_named() -> None:
    with pytest.raises(ValueError, match="spaces_pickle"):
        spaces.to_spec(gym.spaces.Dict({"a": gym.spaces.Discrete(2)}))
