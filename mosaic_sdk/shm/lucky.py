"""``LuckyClient``: the LuckyEngine design's Python client, calls as the design writes them.

    client = LuckyClient("LuckyEngine_1234")      # or $LUCKY_SHM_NAME; the name exactly
    obs, rewards, dones = client.step(actions)    # numpy views into the segment, no copies
    client.reset([3, 7])                          # reset flags: envs 3 and 7 reset next step
    schema = client.get_schema()                  # command channel

It attaches to a segment in the design's own header layout (``lrbc``, see
``schema/lrbc_layout.md``), written by a design engine or by ``SharedMemoryTransport(...,
layout="lrbc")``; attaching and stepping send no command. ``obs``, ``actions``, ``rewards``
(float32), ``dones``, ``truncateds`` (u8, right after the dones) and ``resets`` are the views;
``obs_tensor()`` is the engine's CUDA observation buffer as a torch tensor when it exports one
(the header's GPU fields).
Underneath it is a ``SharedMemoryClient``, so a dead engine is noticed (``PeerGoneError``)
within a second and a closed one raises ``TransportClosedError``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.layout import LAYOUT_LRBC
from mosaic_sdk.shm.segment import exact_name


class LuckyClient:
    """Attach to the lrbc segment ``shm_name`` (or ``$LUCKY_SHM_NAME``) and step it.

    ``timeout`` (seconds, None = no limit) bounds each wait for the engine; ``attach_timeout``
    how long to wait for the segment to appear.
    """

    def __init__(
        self,
        shm_name: str | None = None,
        *,
        timeout: float | None = None,
        attach_timeout: float = 10.0,
    ) -> None:
        name = exact_name(shm_name)
        self._client = SharedMemoryClient(
            name, timeout=timeout, attach_timeout=attach_timeout, exact_name=True
        )
        if self._client.layout.kind != LAYOUT_LRBC:
            self._client.close()
            raise ValueError(
                f"shm segment {name!r} is in the {self._client.layout.kind} layout, not the "
                "design's lrbc header: attach with SharedMemoryClient, or start the engine with "
                'layout="lrbc"'
            )
        c = self._client
        self.num_envs = c.layout.num_envs
        self.obs_size = c.layout.obs_size
        self.act_size = c.layout.act_size
        self.server_pid = c.engine_pid
        self.obs: np.ndarray = c.obs
        self.actions: np.ndarray = c.actions
        self.rewards: np.ndarray = c.rewards
        self.dones: np.ndarray = c.terminated
        self.truncateds: np.ndarray = c.truncated
        self.resets: np.ndarray = c.resets
        self.image: np.ndarray | None = c.image

    @property
    def name(self) -> str:
        """The segment's name."""
        return self._client.name

    @property
    def frame_seq(self) -> int:
        """Number of the last frame the engine published."""
        return self._client.frame_seq

    @property
    def client(self) -> SharedMemoryClient:
        """The ``SharedMemoryClient`` underneath (commands, ``ping``, ``call``...)."""
        return self._client

    @property
    def gpu_obs_mode(self) -> int:
        """The header's ``gpu_obs_mode``: 0 CPU, 1 CUDA IPC, 2 Vulkan external memory."""
        return self._client.gpu_fields.mode

    def obs_tensor(self) -> Any:
        """The observations as a torch float32 CUDA tensor viewing the engine's device buffer
        through the header's CUDA IPC handle (no copy); None when the engine exports none
        (``gpu_obs_mode`` 0: read ``obs``). See ``SharedMemoryClient.obs_tensor``."""
        return self._client.obs_tensor()

    def step(self, actions: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Write ``actions``, publish them, wait for the frame; returns ``obs, rewards, dones``
        (views; ``truncateds`` is beside them)."""
        obs, rewards, dones, _ = self._client.step(actions)
        return obs, rewards, dones

    def reset(
        self, env_ids: Sequence[int] | int | None = None, contract: dict[str, Any] | None = None
    ) -> np.ndarray:
        """Reset ``env_ids`` (default all).

        Without ``contract`` this only raises their reset flags (the engine resets them at the
        next ``step``); with one (a JSON-able dict) the reset is a command, at once, with
        ``{"contract": ...}`` as its options. Returns ``obs``.
        """
        if env_ids is None:
            ids = list(range(self.num_envs))
        elif isinstance(env_ids, (int, np.integer)):
            ids = [int(env_ids)]
        else:
            ids = [int(i) for i in env_ids]
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"reset: env ids {bad} outside 0..{self.num_envs - 1}")
        if contract is None:
            self.resets[ids] = 1
            return self.obs
        try:
            json.dumps(contract)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"reset: the contract must be a JSON-able dict ({exc})") from None
        request = cmd.ResetRequest(env_ids=ids, seeds=[], options={"contract": contract})
        self._client.request(request)
        return self.obs

    def get_schema(self) -> cmd.GetSchemaResponse:
        """The engine's agent schema, through the command channel."""
        return self._client.get_schema()

    def close(self) -> None:
        """Detach (the engine owns the segment and removes it)."""
        for attr in ("obs", "actions", "rewards", "dones", "truncateds", "resets", "image"):
            setattr(self, attr, None)
        self._client.close()

    def __enter__(self) -> LuckyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
