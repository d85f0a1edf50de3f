"""Gymnasium spaces through the transport: wire form and float32 rows."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import spaces

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


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_values_survive_float32_rows(space: gym.Space) -> None:
    space.seed(0)
    values = [space.sample() for _ in range(4)]
    rows = np.zeros((4, spaces.flat_size(space)), np.float32)
    spaces.encode_rows(space, values, rows)
    batch = spaces.decode_batch(space, rows, copy=True)
    # values travel as float32: exact for every dtype except float64 (documented)
    rtol = 1e-6 if space.dtype == np.float64 else 0
    for value, row, decoded, one in zip(
        values, rows, batch, spaces.decode_rows(space, rows), strict=True
    ):
        assert space.contains(spaces.decode_one(space, row))
        assert space.contains(one)
        np.testing.assert_allclose(decoded, value, rtol=rtol)
        np.testing.assert_allclose(one, value, rtol=rtol)
        assert np.asarray(one).dtype == space.dtype


def test_unsupported_space_names_the_fix() -> None:
    with pytest.raises(ValueError, match="FlattenObservation"):
        spaces.flat_size(gym.spaces.Dict({"a": gym.spaces.Discrete(2)}))


def test_action_batch_of_the_wrong_size_is_refused() -> None:
    rows = np.zeros((4, 1), np.float32)
    with pytest.raises(ValueError, match="expected"):
        spaces.encode_batch(gym.spaces.Discrete(2), np.zeros(3), rows)
