"""``gym.vector`` of the CleanRL worker's gym layer: gymnasium vector envs, gym 0.23's API."""

from __future__ import annotations

from mosaic_worker_cleanrl.legacy_gym import LegacyAsyncVectorEnv as AsyncVectorEnv
from mosaic_worker_cleanrl.legacy_gym import LegacySyncVectorEnv as SyncVectorEnv
from mosaic_worker_cleanrl.legacy_gym import LegacyVectorEnv as VectorEnv

__all__ = ["AsyncVectorEnv", "SyncVectorEnv", "VectorEnv"]
